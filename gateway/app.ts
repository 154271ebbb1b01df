import { createHttpApp } from '../common/http-app.js'
import type { GatewayServerConfig } from './config.js'
import { DEFAULT_BODY_LIMIT_BYTES } from './options.js'
import { portierGateway } from './plugin.js'
import type { RuntimeDependencies } from './runtime.js'

export { buildMetricsServer } from './observability/metrics-server.js'

export interface GatewayServerOptions extends RuntimeDependencies {
  /** Where log lines go; tests pass a stream to read them. */
  logStream?: NodeJS.WritableStream
}

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
    ...(config.timeouts !== undefined ? { timeouts: config.timeouts } : {}),
    ...(config.unreadBodies !== undefined ? { unreadBodies: config.unreadBodies } : {}),
    // The gateway's request path does what they do itself; its own other routes get them from the plugin.
    serviceHooks: false
  })
  await app.register(portierGateway, {
    documentationRoutes: true,
    ...config.plugin,
    ...deps,
    ...(config.tracing != null ? { tracing: config.tracing } : {}),
    ...(config.unreadBodies !== undefined ? { unreadBodies: config.unreadBodies } : {})
  })
  return app
}
