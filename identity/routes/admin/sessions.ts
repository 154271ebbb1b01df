import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { CommonProblems } from '../../../common/problem.js'
import { problemResponses } from '../../../common/problem-schema.js'
import { IdentityProblems } from '../../errors.js'
import { Id, IdParams, SessionListLimit, SessionView } from '../../schemas.js'
import type { IdentityServices } from '../../services/index.js'
import { sessionView } from '../../views.js'
import { ADMIN_PROBLEMS } from './credential-guard.js'
import { operator } from './operator-route.js'
import { OPERATOR_PERMISSIONS } from '../../../common/operator-permissions.js'

const tags = ['sessions']
const BY_ID = [...ADMIN_PROBLEMS, CommonProblems.validationFailed, IdentityProblems.sessionNotFound]

/** /admin/sessions: list (optionally by user) and revoke one. */
export const adminSessionRoutes: FastifyPluginAsyncTypebox<{ services: IdentityServices }> = async (app, { services }) => {
  const { sessions, clock } = services

  app.get('/admin/sessions', {
    ...operator(OPERATOR_PERMISSIONS.sessions),
    schema: {
      summary: 'List sessions, newest first',
      tags,
      querystring: Type.Object({
        user_id: Type.Optional(Id),
        limit: SessionListLimit
      }, { additionalProperties: false }),
      response: { 200: Type.Object({ sessions: Type.Array(SessionView) }), ...problemResponses(ADMIN_PROBLEMS, CommonProblems.validationFailed) }
    }
  }, async (request) => ({
    sessions: sessions.list({ ...(request.query.user_id !== undefined ? { userId: request.query.user_id } : {}), limit: request.query.limit })
      .map((s) => sessionView(s, clock.now()))
  }))

  app.get('/admin/sessions/:id', {
    ...operator(OPERATOR_PERMISSIONS.sessions),
    schema: { summary: 'Show a session', tags, params: IdParams, response: { 200: Type.Object({ session: SessionView }), ...problemResponses(BY_ID) } }
  }, async (request) => ({ session: sessionView(sessions.get(request.params.id), clock.now()) }))

  app.delete('/admin/sessions/:id', {
    ...operator(OPERATOR_PERMISSIONS.sessions),
    schema: { summary: 'Revoke a session', tags, params: IdParams, response: { 200: Type.Object({ session: SessionView }), ...problemResponses(BY_ID) } }
  }, async (request) => ({ session: sessionView(await sessions.revoke(request.params.id, 'admin'), clock.now()) }))
}
