import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { ACCESS_TOKEN_TTL_SECONDS } from '../../../common/access-token-profile.js'
import { RevokedSessions, RevokedSessionsQuery, SESSIONS_REVOKED_PATH } from '../../../common/internal-api.js'
import { CommonProblems } from '../../../common/problem.js'
import { problemResponses } from '../../../common/problem-schema.js'
import { SERVICE_PROBLEMS } from '../admin/credential-guard.js'
import type { IdentityServices } from '../../services/index.js'

/**
 * GET /internal/sessions/revoked?since=<ISO time>: sessions revoked since then,
 * oldest first. Without `since`, the last access-token lifetime: older revocations
 * cannot have live tokens left. A gateway pages by passing the last `revoked_at`.
 */
export const sessionsRevokedRoutes: FastifyPluginAsyncTypebox<{ services: IdentityServices }> = async (app, { services }) => {
  app.get(SESSIONS_REVOKED_PATH, {
    schema: {
      summary: 'Sessions revoked since a time',
      tags: ['internal'],
      security: [{ serviceCredential: [] }],
      querystring: RevokedSessionsQuery,
      response: {
        200: RevokedSessions,
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
