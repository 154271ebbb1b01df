import type { FastifyInstance } from 'fastify'

/**
 * GET /healthz: the process is up and serving, for container health checks and
 * probes; no session, no identity call (a console whose identity is away is still
 * alive, and its pages say so). Outside /console, so the gateway never forwards it:
 * it is asked on the console's own port, as identity's and the gateway's are.
 */
export function healthRoutes (app: FastifyInstance): void {
  app.get('/healthz', {
    schema: {
      summary: 'Liveness',
      response: {
        200: { type: 'object', properties: { status: { type: 'string', const: 'ok' } }, required: ['status'], additionalProperties: false }
      }
    }
  }, async () => ({ status: 'ok' as const }))
}
