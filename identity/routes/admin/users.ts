import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { Email, IdParams, MAX_ROLES_PER_USER, Password, RoleName, SessionView, UserView } from '../../schemas.js'
import type { IdentityServices } from '../../services/index.js'
import { sessionView, userView } from '../../views.js'

const closed = { additionalProperties: false } as const
const UserAnswer = Type.Object({ user: UserView })

/** /admin/users: create, list, show, set roles, change password, disable/enable, their sessions. */
export const adminUserRoutes: FastifyPluginAsyncTypebox<{ services: IdentityServices }> = async (app, { services }) => {
  const { users, sessions, permissionsOf, clock } = services
  const view = (user: Parameters<typeof userView>[0]) => ({ user: userView(user, permissionsOf(user.id)) })

  app.post('/admin/users', {
    schema: {
      summary: 'Create a user',
      body: Type.Object({ email: Email, password: Password, roles: Type.Array(RoleName, { default: [], maxItems: MAX_ROLES_PER_USER }) }, closed),
      response: { 201: UserAnswer }
    }
  }, async (request, reply) => reply.code(201).send(view(await users.create(request.body))))

  app.get('/admin/users', {
    schema: { summary: 'List users', response: { 200: Type.Object({ users: Type.Array(UserView) }) } }
  }, async () => ({ users: users.list().map((u) => userView(u, permissionsOf(u.id))) }))

  app.get('/admin/users/:id', {
    schema: { summary: 'Show a user', params: IdParams, response: { 200: UserAnswer } }
  }, async (request) => view(users.get(request.params.id)))

  app.put('/admin/users/:id/roles', {
    schema: {
      summary: "Replace a user's roles",
      params: IdParams,
      body: Type.Object({ roles: Type.Array(RoleName, { maxItems: MAX_ROLES_PER_USER }) }, closed),
      response: { 200: UserAnswer }
    }
  }, async (request) => view(await users.setRoles(request.params.id, request.body.roles)))

  app.put('/admin/users/:id/password', {
    schema: {
      summary: "Change a user's password (ends all of the user's sessions)",
      params: IdParams,
      body: Type.Object({ password: Password }, closed),
      response: { 200: UserAnswer }
    }
  }, async (request) => view(await users.changePassword(request.params.id, request.body.password)))

  for (const [action, disabled] of [['disable', true], ['enable', false]] as const) {
    app.post(`/admin/users/:id/${action}`, {
      schema: {
        summary: disabled ? "Disable a user (ends all of the user's sessions)" : 'Enable a disabled user',
        params: IdParams,
        response: { 200: UserAnswer }
      }
    }, async (request) => view(await users.setDisabled(request.params.id, disabled)))
  }

  app.get('/admin/users/:id/sessions', {
    schema: { summary: "List a user's sessions", params: IdParams, response: { 200: Type.Object({ sessions: Type.Array(SessionView) }) } }
  }, async (request) => {
    users.get(request.params.id)
    return { sessions: sessions.list({ userId: request.params.id }).map((s) => sessionView(s, clock.now())) }
  })

  app.delete('/admin/users/:id/sessions', {
    schema: {
      summary: "Revoke all of a user's sessions",
      params: IdParams,
      response: { 200: Type.Object({ revoked: Type.Array(Type.String()) }) }
    }
  }, async (request) => {
    users.get(request.params.id)
    return { revoked: await sessions.revokeAllOfUser(request.params.id, 'admin') }
  })
}
