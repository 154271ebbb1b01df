import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { CommonProblems } from '../../../common/problem.js'
import { TrafficPolicies } from '../../../common/traffic/policy.js'
import { BODY_PROBLEMS, problemResponses } from '../../../common/problem-schema.js'
import { IdentityProblems } from '../../errors.js'
import { ApiKeyView, CreatedKeyView, GraceSeconds, Id, IdParams, KeyListQuery, KeyName, NullableTimestamp, Permissions } from '../../schemas.js'
import type { IdentityServices } from '../../services/index.js'
import type { CreatedKey } from '../../services/api-keys.js'
import { apiKeyView } from '../../views.js'
import { keyListCriteriaOf } from '../../services/key-list.js'
import { ADMIN_PROBLEMS } from './credential-guard.js'
import { operator } from './operator-route.js'
import { OPERATOR_PERMISSIONS } from '../../../common/operator-permissions.js'

const closed = { additionalProperties: false } as const
const KeyAnswer = Type.Object({ api_key: ApiKeyView, warnings: Type.Optional(Type.Array(Type.String())) })
const tags = ['api-keys']
/** Every route with an :id answers these; a revoked key refuses every change. */
const BY_ID = [...ADMIN_PROBLEMS, CommonProblems.validationFailed, IdentityProblems.keyNotFound]
const EXPIRY_PROBLEMS = [IdentityProblems.expiryInPast, IdentityProblems.keyLifetimeTooLong]

const toMs = (iso: string | null): number | null => (iso === null ? null : Date.parse(iso))

/** /admin/keys: the API key lifecycle. The full key appears only in create and rotate answers. */
export const adminApiKeyRoutes: FastifyPluginAsyncTypebox<{ services: IdentityServices }> = async (app, { services }) => {
  const { apiKeys, clock } = services
  const view = (id: string) => apiKeyView(apiKeys.get(id), apiKeys.secretsOf(id), clock.now())
  const created = (result: CreatedKey) => ({ api_key: view(result.key.id), key: result.secret, warnings: result.warnings })

  app.post('/admin/keys', {
    ...operator(OPERATOR_PERMISSIONS.keys),
    schema: {
      summary: 'Create an API key (the full key is in this answer only)',
      tags,
      body: Type.Object({
        name: KeyName,
        permissions: Permissions,
        expires_at: Type.Optional(NullableTimestamp),
        policies: Type.Optional(TrafficPolicies),
        owner_user_id: Type.Optional(Type.Union([Id, Type.Null()]))
      }, closed),
      response: {
        201: CreatedKeyView,
        ...problemResponses(ADMIN_PROBLEMS, BODY_PROBLEMS, EXPIRY_PROBLEMS, IdentityProblems.keyNameTaken, IdentityProblems.userNotFound)
      }
    }
  }, async (request, reply) => {
    const result = await apiKeys.create({
      name: request.body.name,
      permissions: request.body.permissions,
      expiresAt: toMs(request.body.expires_at ?? null),
      policies: request.body.policies ?? [],
      ownerUserId: request.body.owner_user_id ?? null
    })
    return reply.code(201).header('cache-control', 'no-store').send(created(result))
  })

  app.get('/admin/keys', {
    ...operator(OPERATOR_PERMISSIONS.keys),
    schema: {
      summary: 'List API keys (never their secrets), all or those every given filter matches',
      tags,
      querystring: KeyListQuery,
      response: { 200: Type.Object({ api_keys: Type.Array(ApiKeyView) }), ...problemResponses(ADMIN_PROBLEMS, CommonProblems.validationFailed) }
    }
  }, async (request) => ({
    api_keys: apiKeys.list(keyListCriteriaOf(request.query)).map((k) => apiKeyView(k, apiKeys.secretsOf(k.id), clock.now()))
  }))

  app.get('/admin/keys/:id', {
    ...operator(OPERATOR_PERMISSIONS.keys),
    schema: { summary: 'Show an API key', tags, params: IdParams, response: { 200: KeyAnswer, ...problemResponses(BY_ID) } }
  }, async (request) => ({ api_key: view(request.params.id) }))

  app.patch('/admin/keys/:id', {
    ...operator(OPERATOR_PERMISSIONS.keys),
    schema: {
      summary: "Change an API key's permissions, expiry or traffic policies",
      tags,
      params: IdParams,
      body: Type.Object({
        permissions: Type.Optional(Permissions),
        expires_at: Type.Optional(NullableTimestamp),
        policies: Type.Optional(TrafficPolicies)
      }, { ...closed, minProperties: 1 }),
      response: { 200: KeyAnswer, ...problemResponses(BY_ID, BODY_PROBLEMS, EXPIRY_PROBLEMS, IdentityProblems.keyRevoked) }
    }
  }, async (request) => {
    const { key, warnings } = await apiKeys.update(request.params.id, {
      ...(request.body.permissions !== undefined ? { permissions: request.body.permissions } : {}),
      ...(request.body.expires_at !== undefined ? { expiresAt: toMs(request.body.expires_at) } : {}),
      ...(request.body.policies !== undefined ? { policies: request.body.policies } : {})
    })
    return { api_key: view(key.id), warnings }
  })

  for (const [action, disabled] of [['disable', true], ['enable', false]] as const) {
    app.post(`/admin/keys/:id/${action}`, {
      ...operator(OPERATOR_PERMISSIONS.keys),
      schema: {
        summary: disabled ? 'Disable an API key (reversible)' : 'Re-enable a disabled API key',
        tags,
        params: IdParams,
        response: { 200: KeyAnswer, ...problemResponses(BY_ID, IdentityProblems.keyRevoked) }
      }
    }, async (request) => ({ api_key: view((await apiKeys.setDisabled(request.params.id, disabled)).id) }))
  }

  app.post('/admin/keys/:id/revoke', {
    ...operator(OPERATOR_PERMISSIONS.keys),
    schema: { summary: 'Revoke an API key (final)', tags, params: IdParams, response: { 200: KeyAnswer, ...problemResponses(BY_ID) } }
  }, async (request) => ({ api_key: view((await apiKeys.revoke(request.params.id)).id) }))

  app.post('/admin/keys/:id/rotate', {
    ...operator(OPERATOR_PERMISSIONS.keys),
    schema: {
      summary: 'Issue a new secret; the old one works for the grace period (the full key is in this answer only)',
      tags,
      params: IdParams,
      body: Type.Optional(Type.Object({ grace_seconds: Type.Optional(GraceSeconds) }, closed)),
      response: { 200: CreatedKeyView, ...problemResponses(BY_ID, BODY_PROBLEMS, IdentityProblems.keyRevoked) }
    },
    // The body is optional: a bare POST rotates with the default grace period.
    preValidation: (request, _reply, done) => { request.body ??= {}; done() }
  }, async (request, reply) => {
    const result = await apiKeys.rotate(request.params.id, request.body?.grace_seconds)
    return reply.header('cache-control', 'no-store').send(created(result))
  })
}
