import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { problemResponses } from '../../../common/problem-schema.js'
import { Jwks } from '../../schemas.js'
import type { IdentityServices } from '../../services/index.js'

/** Short enough that a rotation reaches gateways soon even without the event. */
const JWKS_MAX_AGE_SECONDS = 60

/** GET /.well-known/jwks.json: public keys only. */
export const jwksRoutes: FastifyPluginAsyncTypebox<{ services: IdentityServices }> = async (app, { services }) => {
  app.get('/.well-known/jwks.json', {
    schema: { summary: 'Public keys that verify access tokens', tags: ['tokens'], response: { 200: Jwks, ...problemResponses() } }
  }, async (_request, reply) => {
    return reply.header('cache-control', `public, max-age=${JWKS_MAX_AGE_SECONDS}`).send(services.signingKeys.jwks())
  })
}
