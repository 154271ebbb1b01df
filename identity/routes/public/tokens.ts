import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { BODY_PROBLEMS, problemResponses } from '../../../common/problem-schema.js'
import { IdentityProblems } from '../../errors.js'
import { BearerHeaders, RefreshBody, TokenSet } from '../../schemas.js'
import type { IdentityServices } from '../../services/index.js'
import { noteTokenOwner, requireBearer, SESSION_TOKEN_PROBLEMS } from './sessions.js'

/** The refresh paths: the contract's `/tokens` and its French variant `/jetons`. */
const REFRESH_PATHS = ['/tokens', '/jetons'] as const

/** POST /tokens and POST /jetons: rotate the refresh token, return a new token set. */
export const tokenRoutes: FastifyPluginAsyncTypebox<{ services: IdentityServices }> = async (app, { services }) => {
  for (const path of REFRESH_PATHS) {
    app.post(path, {
      schema: {
        summary: path === '/tokens'
          ? 'Refresh: exchange the refresh token for a new token set'
          : 'Refresh (French path of POST /tokens)',
        tags: ['tokens'],
        // The access token of the same session, expired or not.
        security: [{ accessToken: [] }],
        headers: BearerHeaders,
        body: RefreshBody,
        response: {
          200: TokenSet,
          ...problemResponses(BODY_PROBLEMS, SESSION_TOKEN_PROBLEMS, IdentityProblems.refreshTokenInvalid,
            IdentityProblems.refreshTokenExpired, IdentityProblems.refreshTokenReused, IdentityProblems.refreshTokenSuperseded)
        }
      }
    }, async (request, reply) => {
      const tokenSet = await services.sessions.refresh(requireBearer(request.headers.authorization), request.body.refresh_token)
      noteTokenOwner(request, tokenSet)
      return reply.header('cache-control', 'no-store').send(tokenSet)
    })
  }
}
