import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { problemResponses } from '../../../common/problem-schema.js'
import { SigningKeyView } from '../../schemas.js'
import type { IdentityServices } from '../../services/index.js'
import { signingKeyView } from '../../views.js'
import { ADMIN_PROBLEMS } from './credential-guard.js'
import { operator } from './operator-route.js'
import { OPERATOR_PERMISSIONS } from '../../../common/operator-permissions.js'

const tags = ['signing-keys']

/** /admin/signing-keys: list, and rotate (the old key stays published until its tokens expire). */
export const adminSigningKeyRoutes: FastifyPluginAsyncTypebox<{ services: IdentityServices }> = async (app, { services }) => {
  const { signingKeys, clock } = services

  app.get('/admin/signing-keys', {
    ...operator(OPERATOR_PERMISSIONS.signingKeys),
    schema: {
      summary: 'List signing keys (public data only)',
      tags,
      response: { 200: Type.Object({ signing_keys: Type.Array(SigningKeyView) }), ...problemResponses(ADMIN_PROBLEMS) }
    }
  }, async () => ({ signing_keys: signingKeys.list().map((k) => signingKeyView(k, clock.now())) }))

  app.post('/admin/signing-keys/rotate', {
    ...operator(OPERATOR_PERMISSIONS.signingKeys),
    schema: { summary: 'Rotate the signing key', tags, response: { 200: Type.Object({ signing_key: SigningKeyView }), ...problemResponses(ADMIN_PROBLEMS) } }
  }, async () => ({ signing_key: signingKeyView(await signingKeys.rotate(), clock.now()) }))
}
