import { createHttpApp } from '../../common/http-app.js'
import type { ListenerTimeouts } from '../../common/listener-limits.js'
import { metricsRoute } from './metrics-route.js'
import type { MetricsSource } from './metrics.js'

/** The metrics listener takes no body: GET /metrics is all it serves. */
const METRICS_BODY_LIMIT_BYTES = 1_024

export interface MetricsServerConfig {
  logLevel: string
  timeouts?: ListenerTimeouts
}

/**
 * The private metrics listener of the standalone gateway (GATEWAY_METRICS_HOST and
 * GATEWAY_METRICS_PORT): GET /metrics of `source`, without a credential, for
 * Prometheus on a private network, as Kong's status listener does. A Portier HTTP app
 * like the main one (same timeouts, problem+json answers, one log line per request);
 * nothing else is served there, and nothing of the traffic is. A module of its own so
 * that a cluster's primary, which serves its workers' sum, loads no more than this.
 */
export async function buildMetricsServer (config: MetricsServerConfig, source: { metrics: { registry: MetricsSource } },
  options: { logStream?: NodeJS.WritableStream } = {}) {
  const app = createHttpApp({
    name: 'gateway-metrics',
    logLevel: config.logLevel,
    ...(options.logStream !== undefined ? { logStream: options.logStream } : {}),
    bodyLimitBytes: METRICS_BODY_LIMIT_BYTES,
    ...(config.timeouts !== undefined ? { timeouts: config.timeouts } : {})
  })
  await app.register(metricsRoute, { metrics: source.metrics })
  return app
}
