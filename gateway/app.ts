import { createHttpApp } from '../common/http-app.js'
import type { GatewayServerConfig } from './config.js'
import { portierGateway } from './plugin.js'
import type { RuntimeDependencies } from './runtime.js'

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
    bodyLimitBytes: config.plugin.bodyLimitBytes ?? 1_048_576,
    trustProxy: config.trustProxy,
    ...(config.timeouts !== undefined ? { timeouts: config.timeouts } : {})
  })
  await app.register(portierGateway, { documentationRoutes: true, ...config.plugin, ...deps })
  return app
}
