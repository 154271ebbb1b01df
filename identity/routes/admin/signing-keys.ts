import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { SigningKeyView } from '../../schemas.js'
import type { IdentityServices } from '../../services/index.js'
import { signingKeyView } from '../../views.js'

/** /admin/signing-keys: list, and rotate (the old key stays published until its tokens expire). */
export const adminSigningKeyRoutes: FastifyPluginAsyncTypebox<{ services: IdentityServices }> = async (app, { services }) => {
  const { signingKeys, clock } = services

  app.get('/admin/signing-keys', {
    schema: { summary: 'List signing keys (public data only)', response: { 200: Type.Object({ signing_keys: Type.Array(SigningKeyView) }) } }
  }, async () => ({ signing_keys: signingKeys.list().map((k) => signingKeyView(k, clock.now())) }))

  app.post('/admin/signing-keys/rotate', {
    schema: { summary: 'Rotate the signing key', response: { 200: Type.Object({ signing_key: SigningKeyView }) } }
  }, async () => ({ signing_key: signingKeyView(await signingKeys.rotate(), clock.now()) }))
}
