import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { CommonProblems } from '../../../common/problem.js'
import { BODY_PROBLEMS, problemResponses } from '../../../common/problem-schema.js'
import { IdentityProblems } from '../../errors.js'
import { ApiKeyView, BearerHeaders, CreatedKeyView, IdParams, KeyName, Permissions, Timestamp } from '../../schemas.js'
import type { CreatedKey } from '../../services/api-keys.js'
import type { IdentityServices } from '../../services/index.js'
import { MAX_SELF_SERVICE_GRACE_SECONDS } from '../../services/self-service.js'
import type { ApiKeyRecord } from '../../store/api-keys-store.js'
import { ownKeyView } from '../../views.js'
import { KEY_USAGE_PROBLEMS, KeyUsageAnswer, keyUsageAnswer, KeyUsageQuery } from '../admin/key-usage.js'
import { authenticateOwner, keepAnswersPrivate, ME_PROBLEMS, ME_SECURITY, ME_TAGS } from './me-auth.js'

const closed = { additionalProperties: false } as const
const KeyAnswer = Type.Object({ api_key: ApiKeyView })
/** Every route with an :id answers these: another user's key is an unknown one. */
const BY_ID = [...ME_PROBLEMS, CommonProblems.validationFailed, IdentityProblems.keyNotFound]
const common = { tags: ME_TAGS, security: ME_SECURITY, headers: BearerHeaders }

/**
 * /me/keys: a user's own API keys, with an access token only. Keys they make are bounded
 * by them (identity/services/self-service.ts); the full key appears only in the create
 * and rotate answers.
 */
export const meKeyRoutes: FastifyPluginAsyncTypebox<{ services: IdentityServices }> = async (app, { services }) => {
  // Services are read in the handlers only: the public document is generated without them.
  keepAnswersPrivate(app)
  const view = (key: ApiKeyRecord) => ownKeyView(key, services.apiKeys.secretsOf(key.id), services.clock.now())
  const created = (result: CreatedKey) => ({ api_key: view(services.apiKeys.get(result.key.id)), key: result.secret, warnings: result.warnings })

  app.get('/me/keys', {
    schema: {
      summary: 'List your API keys, however they were made (never their secrets)',
      ...common,
      response: { 200: Type.Object({ api_keys: Type.Array(ApiKeyView) }), ...problemResponses(ME_PROBLEMS) }
    }
  }, async (request) => {
    const { userId } = await authenticateOwner(request, services)
    return { api_keys: services.selfService.keys(userId).map(view) }
  })

  app.post('/me/keys', {
    schema: {
      summary: 'Create an API key of your own, with permissions you hold (the full key is in this answer only)',
      description: 'The key must expire within the longest lifetime your roles allow (GET /me). ' +
        'Its name is yours alone: it clashes only with the names of your own keys.',
      ...common,
      body: Type.Object({ name: KeyName, permissions: Permissions, expires_at: Timestamp }, closed),
      response: {
        201: CreatedKeyView,
        ...problemResponses(ME_PROBLEMS, BODY_PROBLEMS, IdentityProblems.permissionNotHeld, IdentityProblems.expiryInPast,
          IdentityProblems.keyLifetimeTooLong, IdentityProblems.keyLimitReached, IdentityProblems.keyNameTaken, IdentityProblems.keyChangesThrottled)
      }
    }
  }, async (request, reply) => {
    const { userId } = await authenticateOwner(request, services)
    const { name, permissions, expires_at: expiresAt } = request.body
    const result = await services.selfService.createKey(userId, { name, permissions, expiresAt: Date.parse(expiresAt) })
    return reply.code(201).send(created(result))
  })

  app.get('/me/keys/:id', {
    schema: { summary: 'Show one of your API keys', ...common, params: IdParams, response: { 200: KeyAnswer, ...problemResponses(BY_ID) } }
  }, async (request) => {
    const { userId } = await authenticateOwner(request, services)
    return { api_key: view(services.selfService.key(userId, request.params.id)) }
  })

  app.post('/me/keys/:id/rotate', {
    schema: {
      summary: 'Issue a new secret for one of your keys; the old one works for the grace period (the full key is in this answer only)',
      description: `grace_seconds: 0 (the old secret stops now) to ${MAX_SELF_SERVICE_GRACE_SECONDS} (7 days); never past the key's own expiry ` +
        '(a longer grace is cut to it, with a warning).',
      ...common,
      params: IdParams,
      body: Type.Optional(Type.Object({ grace_seconds: Type.Optional(Type.Integer({ minimum: 0, maximum: MAX_SELF_SERVICE_GRACE_SECONDS })) }, closed)),
      response: { 200: CreatedKeyView, ...problemResponses(BY_ID, BODY_PROBLEMS, IdentityProblems.keyRevoked, IdentityProblems.keyChangesThrottled) }
    },
    // The body is optional: a bare POST rotates with the default grace period.
    preValidation: (request, _reply, done) => { request.body ??= {}; done() }
  }, async (request) => {
    const { userId } = await authenticateOwner(request, services)
    return created(await services.selfService.rotateKey(userId, request.params.id, request.body?.grace_seconds))
  })

  app.get('/me/keys/:id/usage', {
    schema: {
      summary: "One of your keys' requests over time: allowed, forbidden, rate-limited, quota-exhausted, upstream errors",
      description: 'As operators see it (GET /admin/keys/{id}/usage): per hour or day, the last 24 hours or 30 days unless from and to say otherwise.',
      ...common,
      params: IdParams,
      querystring: KeyUsageQuery,
      response: { 200: KeyUsageAnswer, ...problemResponses(ME_PROBLEMS, KEY_USAGE_PROBLEMS) }
    }
  }, async (request) => {
    const { userId } = await authenticateOwner(request, services)
    const { id } = services.selfService.key(userId, request.params.id)
    return keyUsageAnswer(services, id, request.query)
  })

  app.post('/me/keys/:id/revoke', {
    schema: { summary: 'Revoke one of your API keys (final)', ...common, params: IdParams, response: { 200: KeyAnswer, ...problemResponses(BY_ID) } }
  }, async (request) => {
    const { userId } = await authenticateOwner(request, services)
    return { api_key: view(await services.selfService.revokeKey(userId, request.params.id)) }
  })
}
