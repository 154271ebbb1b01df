import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { generatedDocument, unusedWhileRegistering, type DocumentationOptions } from '../common/openapi.js'
import { healthRoutes } from './routes/health.js'
import { jwksRoutes } from './routes/public/jwks.js'
import { meRoutes } from './routes/public/me.js'
import { meKeyRoutes } from './routes/public/me-keys.js'
import { meSessionRoutes } from './routes/public/me-sessions.js'
import { sessionRoutes } from './routes/public/sessions.js'
import { tokenRoutes } from './routes/public/tokens.js'
import type { IdentityServices } from './services/index.js'

/**
 * Identity's two OpenAPI documents (what each listener serves at /openapi.json), and
 * the public one generated without a server: identity's public routes are part of the
 * gateway's contract, and the gateway documents them from a committed copy of it
 * (gateway/docs/identity-public.json, rewritten by `npm run docs:identity`).
 */

/** The public listener's routes, in order: the app and its documentation share the list. */
export const PUBLIC_ROUTE_PLUGINS: ReadonlyArray<FastifyPluginAsyncTypebox<{ services: IdentityServices }>> =
  [healthRoutes, sessionRoutes, tokenRoutes, jwksRoutes, meRoutes, meKeyRoutes, meSessionRoutes]

export const IDENTITY_PUBLIC_DOCUMENTATION: DocumentationOptions = {
  title: 'Portier identity — public API',
  description: 'Log in, refresh and log out, the public keys that verify access tokens, and self-service ' +
    '(a user\'s own API keys and sessions, with an access token). ' +
    'Clients call these through the gateway; errors are RFC 9457 `application/problem+json`.',
  securitySchemes: {
    accessToken: {
      type: 'http',
      scheme: 'bearer',
      bearerFormat: 'JWT',
      description: 'An access token (JWT, `typ: at+jwt`) this identity issued: `Authorization: Bearer <access_token>`.'
    }
  },
  tags: [
    { name: 'sessions', description: 'Log in and log out.' },
    { name: 'tokens', description: 'Refresh token sets; the keys that verify access tokens.' },
    { name: 'self-service', description: 'Your profile, your own API keys (bounded by what you hold) and your sessions: with an access token, never an API key.' },
    { name: 'health', description: 'Liveness.' }
  ]
}

export const IDENTITY_ADMIN_DOCUMENTATION: DocumentationOptions = {
  title: 'Portier identity — admin and internal API',
  description: 'Users, roles, API keys, sessions and signing keys for operators (`/admin`: the admin credential, or an operator\'s access token ' +
    'whose roles grant the operation\'s operator permission), ' +
    'what gateways call (`/internal`, service credential), and Prometheus metrics (`/metrics`, either). Served on the admin listener only ' +
    '(127.0.0.1 by default), never through the gateway. Errors are RFC 9457 `application/problem+json`.',
  securitySchemes: {
    adminCredential: { type: 'http', scheme: 'bearer', description: 'IDENTITY_ADMIN_TOKEN, as `Authorization: Bearer`: every /admin operation.' },
    operatorToken: {
      type: 'http',
      scheme: 'bearer',
      bearerFormat: 'JWT',
      description: "An operator's access token (from the public listener's login), as `Authorization: Bearer`: an /admin operation " +
        "answers it when the user's roles grant the operator permission the operation lists (`admin:*` grants every one; `*` none). " +
        'Checked at each request against the database: a role or session taken away bites at once.'
    },
    serviceCredential: { type: 'http', scheme: 'bearer', description: 'IDENTITY_SERVICE_TOKEN, as `Authorization: Bearer`: gateways only.' }
  },
  security: [{ adminCredential: [] }],
  tags: [
    { name: 'users' }, { name: 'roles' }, { name: 'api-keys' }, { name: 'sessions' }, { name: 'signing-keys' },
    { name: 'audit', description: 'The audit trail: list and export (NDJSON) its records, verify its hash chain, sign and check its head.' },
    { name: 'internal', description: 'For gateways: key verification, key usage and quota reports, and the revocation feed.' },
    { name: 'metrics', description: 'Prometheus metrics, for the admin or the service credential.' },
    { name: 'health', description: 'Liveness (no credential).' }
  ]
}

/**
 * Identity's public document as the public listener serves it, generated from the same
 * route plugins without a database (handlers never run); built once per process. What
 * the gateway's committed copy is made from, and checked against.
 */
export const identityPublicDocument = generatedDocument(IDENTITY_PUBLIC_DOCUMENTATION, async (app) => {
  const services = unusedWhileRegistering<IdentityServices>('services')
  for (const routes of PUBLIC_ROUTE_PLUGINS) await app.register(routes, { services })
})
