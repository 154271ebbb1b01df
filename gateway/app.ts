import { createHttpApp } from '../common/http-app.js'
import type { GatewayServerConfig } from './config.js'
import { metricsRoute } from './observability/metrics-route.js'
import { DEFAULT_BODY_LIMIT_BYTES } from './options.js'
import { portierGateway, type PortierGateway } from './plugin.js'
import type { RuntimeDependencies } from './runtime.js'

export interface GatewayServerOptions extends RuntimeDependencies {
  /** Where log lines go; tests pass a stream to read them. */
  logStream?: NodeJS.WritableStream
}

/** The metrics listener takes no body: GET /metrics is all it serves. */
const METRICS_BODY_LIMIT_BYTES = 1_024

/**
 * The standalone gateway: a Portier HTTP app with nothing but the gateway plugin
 * registered, documentation included (/openapi.json, /docs) unless the config says otherwise.
 */
export async function buildGatewayServer (config: GatewayServerConfig, options: GatewayServerOptions = {}) {
  const { logStream, ...deps } = options
  const app = createHttpApp({
    name: 'gateway',
    logLevel: config.logLevel,
    ...(logStream !== undefined ? { logStream } : {}),
    bodyLimitBytes: config.plugin.bodyLimitBytes ?? DEFAULT_BODY_LIMIT_BYTES,
    trustProxy: config.trustProxy,
    ...(config.timeouts !== undefined ? { timeouts: config.timeouts } : {})
  })
  await app.register(portierGateway, { documentationRoutes: true, ...config.plugin, ...deps })
  return app
}

/**
 * The private metrics listener of the standalone gateway (GATEWAY_METRICS_HOST and
 * GATEWAY_METRICS_PORT): GET /metrics of `runtime`, without a credential, for
 * Prometheus on a private network, as Kong's status listener does. A Portier HTTP app
 * like the main one (same timeouts, problem+json answers, one log line per request);
 * nothing else is served there, and nothing of the traffic is.
 */
export async function buildMetricsServer (config: Pick<GatewayServerConfig, 'logLevel'> & Partial<Pick<GatewayServerConfig, 'timeouts'>>,
  runtime: Pick<PortierGateway, 'metrics'>, options: Pick<GatewayServerOptions, 'logStream'> = {}) {
  const app = createHttpApp({
    name: 'gateway-metrics',
    logLevel: config.logLevel,
    ...(options.logStream !== undefined ? { logStream: options.logStream } : {}),
    bodyLimitBytes: METRICS_BODY_LIMIT_BYTES,
    ...(config.timeouts !== undefined ? { timeouts: config.timeouts } : {})
  })
  await app.register(metricsRoute, { metrics: runtime.metrics })
  return app
}
