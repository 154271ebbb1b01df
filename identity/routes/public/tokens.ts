import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { BearerHeaders, RefreshBody, TokenSet } from '../../schemas.js'
import type { IdentityServices } from '../../services/index.js'
import { requireBearer } from './sessions.js'

/** The refresh paths: the contract's `/tokens` and its French variant `/jetons`. */
const REFRESH_PATHS = ['/tokens', '/jetons'] as const

/** POST /tokens and POST /jetons: rotate the refresh token, return a new token set. */
export const tokenRoutes: FastifyPluginAsyncTypebox<{ services: IdentityServices }> = async (app, { services }) => {
  for (const path of REFRESH_PATHS) {
    app.post(path, {
      schema: {
        summary: 'Refresh: exchange the refresh token for a new token set',
        headers: BearerHeaders,
        body: RefreshBody,
        response: { 200: TokenSet }
      }
    }, async (request, reply) => {
      const tokenSet = await services.sessions.refresh(requireBearer(request.headers.authorization), request.body.refresh_token)
      return reply.header('cache-control', 'no-store').send(tokenSet)
    })
  }
}
