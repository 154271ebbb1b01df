import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { problemResponses } from '../../../common/problem-schema.js'
import { BearerHeaders, Timestamp } from '../../schemas.js'
import type { IdentityServices } from '../../services/index.js'
import { authenticateOwner, keepAnswersPrivate, ME_PROBLEMS, ME_SECURITY, ME_TAGS } from './me-auth.js'

const Profile = Type.Object({
  user: Type.Object({
    id: Type.String(),
    email: Type.String(),
    roles: Type.Array(Type.String()),
    created_at: Timestamp
  }),
  /** The union of the user's roles' permissions: the most any key of theirs may be given. */
  permissions: Type.Array(Type.String()),
  self_service: Type.Object({
    /** The longest lifetime a key made through /me/keys may have: the largest their roles set, else the default. */
    key_max_lifetime_days: Type.Integer(),
    max_keys: Type.Integer(),
    /** Keys of theirs neither revoked nor expired, however made. */
    active_keys: Type.Integer(),
    keys_left: Type.Integer(),
    /** Key creations and rotations allowed in any hour. */
    key_changes_per_hour: Type.Integer()
  })
})

/** GET /me: who the access token's user is, what they hold, and what self-service allows them. */
export const meRoutes: FastifyPluginAsyncTypebox<{ services: IdentityServices }> = async (app, { services }) => {
  keepAnswersPrivate(app)
  app.get('/me', {
    schema: {
      summary: 'The user of the access token, their permissions, and what self-service allows them',
      tags: ME_TAGS,
      security: ME_SECURITY,
      headers: BearerHeaders,
      response: { 200: Profile, ...problemResponses(ME_PROBLEMS) }
    }
  }, async (request) => {
    const { userId } = await authenticateOwner(request, services)
    const { user, permissions, allowance } = services.selfService.profile(userId)
    return {
      user: { id: user.id, email: user.email, roles: user.roles, created_at: new Date(user.createdAt).toISOString() },
      permissions,
      self_service: {
        key_max_lifetime_days: allowance.keyMaxLifetimeDays,
        max_keys: allowance.maxKeys,
        active_keys: allowance.activeKeys,
        keys_left: allowance.keysLeft,
        key_changes_per_hour: allowance.keyChangesPerHour
      }
    }
  })
}
