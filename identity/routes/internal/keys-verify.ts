import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { BODY_PROBLEMS, problemResponses } from '../../../common/problem-schema.js'
import { SERVICE_PROBLEMS } from '../admin/credential-guard.js'
import { NullableTimestamp, Timestamp } from '../../schemas.js'
import type { IdentityServices } from '../../services/index.js'

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString())

const Verification = Type.Union([
  Type.Object({
    valid: Type.Literal(true),
    key: Type.Object({ id: Type.String(), name: Type.String(), permissions: Type.Array(Type.String()), expires_at: NullableTimestamp }),
    /** Present when the old secret of a rotation was used: the gateway adds Deprecation/Sunset. */
    deprecation: Type.Union([Type.Object({ deprecated_at: Timestamp, sunset_at: Timestamp }), Type.Null()])
  }),
  Type.Object({
    valid: Type.Literal(false),
    // Without a verified secret only malformed or unknown: a key's state is told to its holder alone.
    reason: Type.Enum(['malformed', 'unknown', 'expired', 'revoked', 'disabled', 'secret_retired'] as const)
  })
])

/** POST /internal/keys/verify: the gateway's cache-miss path for API keys. */
export const keysVerifyRoutes: FastifyPluginAsyncTypebox<{ services: IdentityServices }> = async (app, { services }) => {
  app.post('/internal/keys/verify', {
    schema: {
      summary: 'Verify a presented API key',
      tags: ['internal'],
      security: [{ serviceCredential: [] }],
      // Loose on purpose: any string is answered (malformed ones without a database read).
      body: Type.Object({ key: Type.String({ maxLength: 1024 }) }, { additionalProperties: false }),
      response: { 200: Verification, ...problemResponses(SERVICE_PROBLEMS, BODY_PROBLEMS) }
    }
  }, async (request, reply) => {
    const result = await services.apiKeys.verify(request.body.key)
    reply.header('cache-control', 'no-store')
    if (!result.valid) return { valid: false as const, reason: result.reason }
    return {
      valid: true as const,
      key: { id: result.key.id, name: result.key.name, permissions: result.key.permissions, expires_at: iso(result.key.expiresAt) },
      deprecation: result.deprecation === null
        ? null
        : { deprecated_at: iso(result.deprecation.deprecatedAt) as string, sunset_at: iso(result.deprecation.sunsetAt) as string }
    }
  })
}
