import type { FastifyInstance } from 'fastify'
import type { GatewayRuntime } from '../runtime.js'

const ReadinessSchema = {
  type: 'object',
  properties: {
    status: { type: 'string', enum: ['ready', 'degraded', 'not_ready'] },
    checks: {
      type: 'object',
      properties: {
        config: { type: 'object', properties: { routes: { type: 'integer' }, upstreams: { type: 'integer' } } },
        redis: { type: 'string', enum: ['up', 'down', 'not_configured'] },
        identity: { type: 'string', enum: ['up', 'down'] },
        jwks: { type: 'string', enum: ['loaded', 'not_loaded'] }
      }
    }
  }
} as const

const tags = ['gateway']

/**
 * /healthz: the process answers. /readyz: it can serve — its config is loaded and it
 * holds identity's signing keys; Redis or identity being down makes it "degraded"
 * (still 200: the degraded modes serve what can be verified), not unready. Probes
 * need both on the listener that carries traffic; /metrics is elsewhere
 * (metrics-route.ts): it shows more than a probe needs.
 */
export async function observabilityRoutes (app: FastifyInstance, { runtime }: { runtime: GatewayRuntime }): Promise<void> {
  app.get('/healthz', {
    schema: {
      summary: 'Liveness: the process answers',
      tags,
      response: { 200: { type: 'object', properties: { status: { type: 'string', enum: ['ok'] } } } }
    }
  }, async () => ({ status: 'ok' as const }))

  app.get('/readyz', {
    schema: {
      summary: "Readiness: config loaded and identity's signing keys held (Redis or identity down: degraded, still 200)",
      tags,
      response: { 200: ReadinessSchema, 503: ReadinessSchema }
    }
  }, async (_request, reply) => {
    const readiness = await runtime.readiness()
    reply.header('cache-control', 'no-store')
    return await reply.code(readiness.ready ? 200 : 503).send({ status: readiness.status, checks: readiness.checks })
  })
}
