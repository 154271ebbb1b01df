import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { CommonProblems } from '../../../common/problem.js'
import { BODY_PROBLEMS, problemResponses } from '../../../common/problem-schema.js'
import { IdentityProblems } from '../../errors.js'
import { Email, IdParams, MAX_ROLES_PER_USER, Password, RoleName, SessionView, UserView } from '../../schemas.js'
import type { IdentityServices } from '../../services/index.js'
import { sessionView, userView } from '../../views.js'
import { ADMIN_PROBLEMS } from './credential-guard.js'
import { operator } from './operator-route.js'
import { OPERATOR_PERMISSIONS } from '../../../common/operator-permissions.js'

const closed = { additionalProperties: false } as const
const UserAnswer = Type.Object({ user: UserView })
const tags = ['users']
/** Every route with an :id answers these. */
const BY_ID = [...ADMIN_PROBLEMS, CommonProblems.validationFailed, IdentityProblems.userNotFound]

/** /admin/users: create, list, show, set roles, change password, disable/enable, their sessions. */
export const adminUserRoutes: FastifyPluginAsyncTypebox<{ services: IdentityServices }> = async (app, { services }) => {
  const { users, sessions, permissionsOf, clock } = services
  const view = (user: Parameters<typeof userView>[0]) => ({ user: userView(user, permissionsOf(user.id)) })

  app.post('/admin/users', {
    ...operator(OPERATOR_PERMISSIONS.users),
    schema: {
      summary: 'Create a user',
      tags,
      body: Type.Object({ email: Email, password: Password, roles: Type.Array(RoleName, { default: [], maxItems: MAX_ROLES_PER_USER }) }, closed),
      response: { 201: UserAnswer, ...problemResponses(ADMIN_PROBLEMS, BODY_PROBLEMS, IdentityProblems.unknownRole, IdentityProblems.emailTaken, IdentityProblems.permissionNotHeld) }
    }
  }, async (request, reply) => reply.code(201).send(view(await users.create(request.body))))

  app.get('/admin/users', {
    ...operator(OPERATOR_PERMISSIONS.users),
    schema: { summary: 'List users', tags, response: { 200: Type.Object({ users: Type.Array(UserView) }), ...problemResponses(ADMIN_PROBLEMS) } }
  }, async () => ({ users: users.list().map((u) => userView(u, permissionsOf(u.id))) }))

  app.get('/admin/users/:id', {
    ...operator(OPERATOR_PERMISSIONS.users),
    schema: { summary: 'Show a user', tags, params: IdParams, response: { 200: UserAnswer, ...problemResponses(BY_ID) } }
  }, async (request) => view(users.get(request.params.id)))

  app.put('/admin/users/:id/roles', {
    ...operator(OPERATOR_PERMISSIONS.users),
    schema: {
      summary: "Replace a user's roles",
      tags,
      params: IdParams,
      body: Type.Object({ roles: Type.Array(RoleName, { maxItems: MAX_ROLES_PER_USER }) }, closed),
      response: { 200: UserAnswer, ...problemResponses(BY_ID, BODY_PROBLEMS, IdentityProblems.unknownRole, IdentityProblems.permissionNotHeld) }
    }
  }, async (request) => view(await users.setRoles(request.params.id, request.body.roles)))

  app.put('/admin/users/:id/password', {
    ...operator(OPERATOR_PERMISSIONS.users),
    schema: {
      summary: "Change a user's password (ends all of the user's sessions)",
      tags,
      params: IdParams,
      body: Type.Object({ password: Password }, closed),
      // Setting it hands the account out: not one holding an operator permission the operator lacks.
      response: { 200: UserAnswer, ...problemResponses(BY_ID, BODY_PROBLEMS, IdentityProblems.permissionNotHeld) }
    }
  }, async (request) => view(await users.changePassword(request.params.id, request.body.password)))

  for (const [action, disabled] of [['disable', true], ['enable', false]] as const) {
    app.post(`/admin/users/:id/${action}`, {
      ...operator(OPERATOR_PERMISSIONS.users),
      schema: {
        summary: disabled ? "Disable a user (ends all of the user's sessions)" : 'Enable a disabled user',
        tags,
        params: IdParams,
        // Enabling hands the user's permissions out again.
        response: { 200: UserAnswer, ...problemResponses(BY_ID, disabled ? [] : [IdentityProblems.permissionNotHeld]) }
      }
    }, async (request) => view(await users.setDisabled(request.params.id, disabled)))
  }

  // A user's sessions are sessions: the permission that lists and revokes anyone's.
  app.get('/admin/users/:id/sessions', {
    ...operator(OPERATOR_PERMISSIONS.sessions),
    schema: {
      summary: "List a user's sessions",
      tags,
      params: IdParams,
      response: { 200: Type.Object({ sessions: Type.Array(SessionView) }), ...problemResponses(BY_ID) }
    }
  }, async (request) => {
    users.get(request.params.id)
    return { sessions: sessions.list({ userId: request.params.id }).map((s) => sessionView(s, clock.now())) }
  })

  app.delete('/admin/users/:id/sessions', {
    ...operator(OPERATOR_PERMISSIONS.sessions),
    schema: {
      summary: "Revoke all of a user's sessions",
      tags,
      params: IdParams,
      response: { 200: Type.Object({ revoked: Type.Array(Type.String()) }), ...problemResponses(BY_ID) }
    }
  }, async (request) => {
    users.get(request.params.id)
    return { revoked: await sessions.revokeAllOfUser(request.params.id, 'admin') }
  })
}
