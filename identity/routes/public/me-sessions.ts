import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { CommonProblems } from '../../../common/problem.js'
import { problemResponses } from '../../../common/problem-schema.js'
import { IdentityProblems } from '../../errors.js'
import { BearerHeaders, IdParams, OwnSessionView } from '../../schemas.js'
import type { IdentityServices } from '../../services/index.js'
import { ownSessionView } from '../../views.js'
import { authenticateOwner, keepAnswersPrivate, ME_PROBLEMS, ME_SECURITY, ME_TAGS } from './me-auth.js'

const common = { tags: ME_TAGS, security: ME_SECURITY, headers: BearerHeaders }

/** /me/sessions: where the user is logged in, and ending their other sessions. */
export const meSessionRoutes: FastifyPluginAsyncTypebox<{ services: IdentityServices }> = async (app, { services }) => {
  keepAnswersPrivate(app)

  app.get('/me/sessions', {
    schema: {
      summary: 'List your live sessions, newest first (`current`: the one of this access token)',
      ...common,
      response: { 200: Type.Object({ sessions: Type.Array(OwnSessionView) }), ...problemResponses(ME_PROBLEMS) }
    }
  }, async (request) => {
    const session = await authenticateOwner(request, services)
    return { sessions: services.selfServiceSessions.active(session.userId).map((s) => ownSessionView(s, session.id)) }
  })

  app.delete('/me/sessions/:id', {
    schema: {
      summary: 'End another session of yours (log out to end the current one)',
      ...common,
      params: IdParams,
      response: {
        204: Type.Null(),
        ...problemResponses(ME_PROBLEMS, CommonProblems.validationFailed, IdentityProblems.sessionNotFound, IdentityProblems.sessionIsCurrent)
      }
    }
  }, async (request, reply) => {
    const session = await authenticateOwner(request, services)
    await services.selfServiceSessions.end(session.userId, session.id, request.params.id)
    return await reply.code(204).send(null)
  })

  app.post('/me/sessions/revoke-others', {
    schema: {
      summary: 'End every session of yours but the current one',
      ...common,
      response: { 200: Type.Object({ revoked: Type.Integer({ description: 'How many sessions this ended.' }) }), ...problemResponses(ME_PROBLEMS) }
    }
  }, async (request) => {
    const session = await authenticateOwner(request, services)
    return { revoked: await services.selfServiceSessions.endOthers(session.userId, session.id) }
  })
}
