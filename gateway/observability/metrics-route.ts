import type { FastifyInstance } from 'fastify'
import type { AcceptRouteConfig } from '../../common/accept.js'
import { readBearer } from '../../common/credentials.js'
import { credentialsMatch } from '../../common/constant-time.js'
import { installProblemErrorHandler } from '../../common/problem.js'
import { PROBLEM_SCHEMA_ID, ProblemSchema, problemResponses } from '../../common/problem-schema.js'
import { GatewayProblems } from '../errors.js'
import type { MetricsSource } from './metrics.js'

export interface MetricsRouteOptions {
  metrics: { registry: MetricsSource }
  /**
   * The Bearer token a scrape must present, compared in constant time. Required on a
   * listener that carries traffic; absent on the private metrics listener, which only
   * the network reaches.
   */
  token?: string
}

/**
 * GET /metrics: Prometheus text, in its own encapsulated context so that its guard
 * and error handler touch nothing else of the app it is registered on (a host app's
 * routes, or the standalone server's private metrics listener).
 */
export async function metricsRoute (app: FastifyInstance, options: MetricsRouteOptions): Promise<void> {
  const token = options.token
  // A host app may not render problems, nor know their schema: this context does, for its own refusals.
  if (app.getSchema(PROBLEM_SCHEMA_ID) === undefined) app.addSchema(ProblemSchema)
  installProblemErrorHandler(app)
  if (token !== undefined) {
    app.addHook('onRequest', (request, _reply, done) => {
      const credential = readBearer(request.headers.authorization)
      done(credential.kind === 'token' && credentialsMatch(credential.token, token) ? undefined : GatewayProblems.metricsUnauthorized())
    })
  }
  app.get('/metrics', {
    schema: {
      summary: 'Prometheus metrics',
      tags: ['gateway'],
      response: {
        200: { description: 'Prometheus text exposition format', content: { 'text/plain': { schema: { type: 'string' } } } },
        ...problemResponses(...(token !== undefined ? [GatewayProblems.metricsUnauthorized] : []))
      }
    },
    config: { acceptsAnyMediaType: true } satisfies AcceptRouteConfig
  }, async (_request, reply) => {
    const { registry } = options.metrics
    reply.type(registry.contentType)
    reply.header('cache-control', 'no-store')
    return await registry.metrics()
  })
}
