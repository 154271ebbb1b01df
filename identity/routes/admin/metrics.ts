import type { FastifyPluginAsync } from 'fastify'
import type { AcceptRouteConfig } from '../../../common/accept.js'
import { problemResponses } from '../../../common/problem-schema.js'
import type { IdentityMetrics } from '../../observability/metrics.js'
import { METRICS_PROBLEMS } from './credential-guard.js'

/** Served whatever the Accept header asks (Prometheus sends its own types), so never a 406. */
const { 406: _neverNotAcceptable, ...REFUSALS } = problemResponses(METRICS_PROBLEMS)

/**
 * GET /metrics on the admin listener only: Prometheus text. The guard lets the admin
 * or the service credential in (credential-guard.ts says why).
 */
export const metricsRoutes: FastifyPluginAsync<{ metrics: IdentityMetrics }> = async (app, { metrics }) => {
  app.get('/metrics', {
    schema: {
      summary: 'Prometheus metrics',
      tags: ['metrics'],
      security: [{ adminCredential: [] }, { serviceCredential: [] }],
      response: {
        200: { description: 'Prometheus text exposition format', content: { 'text/plain': { schema: { type: 'string' } } } },
        ...REFUSALS
      }
    },
    config: { acceptsAnyMediaType: true } satisfies AcceptRouteConfig
  }, async (_request, reply) => {
    reply.type(metrics.registry.contentType).header('cache-control', 'no-store')
    return await metrics.registry.metrics()
  })
}
