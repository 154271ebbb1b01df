import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { KEYS_VERIFY_PATH, KeyVerdict, KeyVerifyRequest } from '../../../common/internal-api.js'
import { BODY_PROBLEMS, problemResponses } from '../../../common/problem-schema.js'
import { SERVICE_PROBLEMS } from '../admin/credential-guard.js'
import type { IdentityServices } from '../../services/index.js'

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString())

/** POST /internal/keys/verify: the gateway's cache-miss path for API keys (schemas: common/internal-api.ts). */
export const keysVerifyRoutes: FastifyPluginAsyncTypebox<{ services: IdentityServices }> = async (app, { services }) => {
  app.post(KEYS_VERIFY_PATH, {
    schema: {
      summary: 'Verify a presented API key',
      tags: ['internal'],
      security: [{ serviceCredential: [] }],
      body: KeyVerifyRequest,
      response: { 200: KeyVerdict, ...problemResponses(SERVICE_PROBLEMS, BODY_PROBLEMS) }
    }
  }, async (request, reply) => {
    const result = await services.apiKeys.verify(request.body.key)
    reply.header('cache-control', 'no-store')
    if (!result.valid) return { valid: false as const, reason: result.reason }
    const { key } = result
    return {
      valid: true as const,
      key: {
        id: key.id,
        name: key.name,
        permissions: result.permissions,
        expires_at: iso(key.expiresAt),
        owner_user_id: key.ownerUserId,
        policies: result.policies
      },
      deprecation: result.deprecation === null
        ? null
        : { deprecated_at: iso(result.deprecation.deprecatedAt) as string, sunset_at: iso(result.deprecation.sunsetAt) as string }
    }
  })
}
