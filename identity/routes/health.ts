import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { problemResponses } from '../../common/problem-schema.js'

/** GET /healthz on both listeners: the process is up and serving. */
export const healthRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get('/healthz', {
    schema: {
      summary: 'Liveness',
      tags: ['health'],
      // Open on both listeners, the admin one included.
      security: [],
      response: { 200: Type.Object({ status: Type.Literal('ok') }), ...problemResponses() }
    }
  }, async () => ({ status: 'ok' as const }))
}
