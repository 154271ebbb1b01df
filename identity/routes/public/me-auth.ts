import type { FastifyInstance, FastifyRequest } from 'fastify'
import { API_KEY_PREFIX } from '../../../common/api-key-format.js'
import { API_KEY_HEADER } from '../../../common/credentials.js'
import { AuthProblems } from '../../../common/problem.js'
import { IdentityDetails } from '../../errors.js'
import type { IdentityServices } from '../../services/index.js'
import type { SessionRecord } from '../../store/sessions-store.js'
import { actAs } from '../audit-context.js'
import { requireBearer, SESSION_TOKEN_PROBLEMS } from './sessions.js'

/** What every /me route can answer for its credential: an access token's refusals. */
export const ME_PROBLEMS = SESSION_TOKEN_PROBLEMS
export const ME_TAGS = ['self-service']
export const ME_SECURITY = [{ accessToken: [] }]

/**
 * The session behind the request's access token, its user named as the audit actor. An
 * API key never manages keys or sessions: one presented (in X-API-Key, or as the Bearer)
 * is answered as no credential at all, whatever else the request carries.
 */
export async function authenticateOwner (request: FastifyRequest, services: Pick<IdentityServices, 'sessions'>): Promise<SessionRecord> {
  if (request.headers[API_KEY_HEADER] !== undefined) throw AuthProblems.credentialsMissing([IdentityDetails.bearerMissing])
  const bearer = requireBearer(request.headers.authorization)
  if (bearer.startsWith(API_KEY_PREFIX)) throw AuthProblems.credentialsMissing([IdentityDetails.bearerMissing])
  const session = await services.sessions.authenticate(bearer)
  actAs(request, { type: 'user', id: session.userId })
  return session
}

/** Answers about one user (and new keys) are theirs alone: no cache keeps them, problems included. */
export function keepAnswersPrivate (app: FastifyInstance): void {
  app.addHook('onRequest', (_request, reply, done) => {
    reply.header('cache-control', 'no-store')
    done()
  })
}
