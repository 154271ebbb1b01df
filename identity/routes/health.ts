import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'

/** GET /healthz on both listeners: the process is up and serving. */
export const healthRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get('/healthz', {
    schema: { summary: 'Liveness', response: { 200: Type.Object({ status: Type.Literal('ok') }) } }
  }, async () => ({ status: 'ok' as const }))
}
