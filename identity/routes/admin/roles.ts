import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { CommonProblems } from '../../../common/problem.js'
import { TrafficPolicies } from '../../../common/traffic/policy.js'
import { BODY_PROBLEMS, problemResponses } from '../../../common/problem-schema.js'
import { IdentityProblems } from '../../errors.js'
import { Permissions, RoleName, RoleView } from '../../schemas.js'
import type { IdentityServices } from '../../services/index.js'
import { roleView } from '../../views.js'
import { ADMIN_PROBLEMS } from './credential-guard.js'
import { operator } from './operator-route.js'
import { OPERATOR_PERMISSIONS } from '../../services/operator-permissions.js'

const NameParams = Type.Object({ name: RoleName }, { additionalProperties: false })
const tags = ['roles']
const BY_NAME = [...ADMIN_PROBLEMS, CommonProblems.validationFailed]

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
      summary: 'Create a role or replace its permissions (and its traffic policies, when given)',
      tags,
      params: NameParams,
      body: Type.Object({ permissions: Permissions, policies: Type.Optional(TrafficPolicies) }, { additionalProperties: false }),
      response: { 200: Type.Object({ role: RoleView }), ...problemResponses(BY_NAME, BODY_PROBLEMS) }
    }
  }, async (request) => ({ role: roleView(await roles.set(request.params.name, request.body.permissions, request.body.policies)) }))

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
