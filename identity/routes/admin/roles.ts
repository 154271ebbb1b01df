import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { Permissions, RoleName, RoleView } from '../../schemas.js'
import type { IdentityServices } from '../../services/index.js'
import { roleView } from '../../views.js'

const NameParams = Type.Object({ name: RoleName }, { additionalProperties: false })

/** /admin/roles: roles map to permission sets (`resource:action`, `resource:*`, `*`). */
export const adminRoleRoutes: FastifyPluginAsyncTypebox<{ services: IdentityServices }> = async (app, { services }) => {
  const { roles } = services

  app.get('/admin/roles', {
    schema: { summary: 'List roles', response: { 200: Type.Object({ roles: Type.Array(RoleView) }) } }
  }, async () => ({ roles: roles.list().map(roleView) }))

  app.get('/admin/roles/:name', {
    schema: { summary: 'Show a role', params: NameParams, response: { 200: Type.Object({ role: RoleView }) } }
  }, async (request) => ({ role: roleView(roles.get(request.params.name)) }))

  app.put('/admin/roles/:name', {
    schema: {
      summary: "Create a role or replace its permissions",
      params: NameParams,
      body: Type.Object({ permissions: Permissions }, { additionalProperties: false }),
      response: { 200: Type.Object({ role: RoleView }) }
    }
  }, async (request) => ({ role: roleView(await roles.set(request.params.name, request.body.permissions)) }))

  app.delete('/admin/roles/:name', {
    schema: { summary: 'Delete a role no user holds', params: NameParams, response: { 204: Type.Null() } }
  }, async (request, reply) => {
    await roles.remove(request.params.name)
    return await reply.code(204).send(null)
  })
}
