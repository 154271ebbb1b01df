import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { CommonProblems } from '../../../common/problem.js'
import { problemResponses } from '../../../common/problem-schema.js'
import { SERVICE_PROBLEMS } from '../admin/credential-guard.js'
import { ACCESS_TOKEN_TTL_SECONDS } from '../../config.js'
import { Timestamp } from '../../schemas.js'
import type { IdentityServices } from '../../services/index.js'

/**
 * GET /internal/sessions/revoked?since=<ISO time>: sessions revoked since then,
 * oldest first. Without `since`, the last access-token lifetime: older revocations
 * cannot have live tokens left. A gateway pages by passing the last `revoked_at`.
 */
export const sessionsRevokedRoutes: FastifyPluginAsyncTypebox<{ services: IdentityServices }> = async (app, { services }) => {
  app.get('/internal/sessions/revoked', {
    schema: {
      summary: 'Sessions revoked since a time',
      tags: ['internal'],
      security: [{ serviceCredential: [] }],
      querystring: Type.Object({ since: Type.Optional(Timestamp) }, { additionalProperties: false }),
      response: {
        200: Type.Object({
          now: Timestamp,
          sessions: Type.Array(Type.Object({ id: Type.String(), revoked_at: Timestamp, expires_at: Timestamp }))
        }),
        ...problemResponses(SERVICE_PROBLEMS, CommonProblems.validationFailed)
      }
    }
  }, async (request) => {
    const now = services.clock.now()
    const since = request.query.since !== undefined ? Date.parse(request.query.since) : now - ACCESS_TOKEN_TTL_SECONDS * 1000
    return {
      now: new Date(now).toISOString(),
      sessions: services.sessions.revokedSince(since).map((s) => ({
        id: s.id, revoked_at: new Date(s.revokedAt).toISOString(), expires_at: new Date(s.expiresAt).toISOString()
      }))
    }
  })
}
