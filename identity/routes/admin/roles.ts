import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { CommonProblems } from '../../../common/problem.js'
import { TrafficPolicies } from '../../../common/traffic/policy.js'
import { BODY_PROBLEMS, problemResponses } from '../../../common/problem-schema.js'
import { IdentityProblems } from '../../errors.js'
import { KeyLifetimeDays, Permissions, RoleName, RoleView } from '../../schemas.js'
import type { IdentityServices } from '../../services/index.js'
import { roleView } from '../../views.js'
import { ADMIN_PROBLEMS } from './credential-guard.js'
import { operator } from './operator-route.js'
import { OPERATOR_PERMISSIONS } from '../../../common/operator-permissions.js'

const NameParams = Type.Object({ name: RoleName }, { additionalProperties: false })
const tags = ['roles']
const BY_NAME = [...ADMIN_PROBLEMS, CommonProblems.validationFailed]
/** What PUT and PATCH may give besides the permissions; absent: a new role has none, an existing one keeps its own. */
const RoleSettings = {
  policies: Type.Optional(TrafficPolicies),
  /** Days; null: back to the configured default. */
  key_max_lifetime_days: Type.Optional(Type.Union([KeyLifetimeDays, Type.Null()]))
}

/** /admin/roles: roles map to permission sets (`resource:action`, `resource:*`, `*`) and traffic policies their holders get. */
export const adminRoleRoutes: FastifyPluginAsyncTypebox<{ services: IdentityServices }> = async (app, { services }) => {
  const { roles } = services

  app.get('/admin/roles', {
    ...operator(OPERATOR_PERMISSIONS.roles),
    schema: { summary: 'List roles', tags, response: { 200: Type.Object({ roles: Type.Array(RoleView) }), ...problemResponses(ADMIN_PROBLEMS) } }
  }, async () => ({ roles: roles.list().map(roleView) }))

  app.get('/admin/roles/:name', {
    ...operator(OPERATOR_PERMISSIONS.roles),
    schema: {
      summary: 'Show a role',
      tags,
      params: NameParams,
      response: { 200: Type.Object({ role: RoleView }), ...problemResponses(BY_NAME, IdentityProblems.roleNotFound) }
    }
  }, async (request) => ({ role: roleView(roles.get(request.params.name)) }))

  app.put('/admin/roles/:name', {
    ...operator(OPERATOR_PERMISSIONS.roles),
    schema: {
      summary: 'Create a role or replace its permissions (and its traffic policies and self-service key lifetime, when given)',
      tags,
      params: NameParams,
      body: Type.Object({ permissions: Permissions, ...RoleSettings }, { additionalProperties: false }),
      response: { 200: Type.Object({ role: RoleView }), ...problemResponses(BY_NAME, BODY_PROBLEMS, IdentityProblems.permissionNotHeld) }
    }
  }, async (request) => {
    const { permissions, policies, key_max_lifetime_days: keyMaxLifetimeDays } = request.body
    return { role: roleView(await roles.set(request.params.name, permissions, policies, keyMaxLifetimeDays)) }
  })

  app.patch('/admin/roles/:name', {
    ...operator(OPERATOR_PERMISSIONS.roles),
    schema: {
      summary: "Change what is given of an existing role's permissions, traffic policies and self-service key lifetime",
      tags,
      params: NameParams,
      body: Type.Object({ permissions: Type.Optional(Permissions), ...RoleSettings }, { additionalProperties: false, minProperties: 1 }),
      response: { 200: Type.Object({ role: RoleView }), ...problemResponses(BY_NAME, BODY_PROBLEMS, IdentityProblems.roleNotFound, IdentityProblems.permissionNotHeld) }
    }
  }, async (request) => {
    const { permissions, policies, key_max_lifetime_days: keyMaxLifetimeDays } = request.body
    const role = roles.get(request.params.name)
    return { role: roleView(await roles.set(role.name, permissions ?? role.permissions, policies, keyMaxLifetimeDays)) }
  })

  app.delete('/admin/roles/:name', {
    ...operator(OPERATOR_PERMISSIONS.roles),
    schema: {
      summary: 'Delete a role no user holds',
      tags,
      params: NameParams,
      response: { 204: Type.Null(), ...problemResponses(BY_NAME, IdentityProblems.roleNotFound, IdentityProblems.roleInUse) }
    }
  }, async (request, reply) => {
    await roles.remove(request.params.name)
    return await reply.code(204).send(null)
  })
}
