import closeWithGrace from 'close-with-grace'
import { buildGatewayServer, buildMetricsServer } from './app.js'
import type { GatewayServerConfig } from './config.js'
import { buildVerifyServer } from './verify/server.js'

/**
 * The gateway as one process (GATEWAY_WORKERS=1): listens (traffic, and metrics on
 * their own private listener), reloads upstreams on SIGHUP, drains on SIGTERM/SIGINT.
 */
export async function runSingleProcess (config: GatewayServerConfig): Promise<void> {
  const gateway = await buildGatewayServer(config)
  const metrics = config.metrics === null ? null : await buildMetricsServer(config, gateway.portierGateway)
  const verify = config.verify == null ? null : await buildVerifyServer({ ...config.verify, logLevel: config.logLevel, ...(config.timeouts !== undefined ? { timeouts: config.timeouts } : {}) }, gateway.portierGateway)
  process.on('SIGHUP', () => { gateway.portierGateway.reload() })
  // SIGHUP means "reload the upstreams" here, not "shut down".
  closeWithGrace({ delay: config.shutdownGraceMs, skip: ['SIGHUP'] }, async ({ signal, err }) => {
    if (err !== undefined) gateway.log.error({ err }, 'shutting down after an error')
    else gateway.log.info({ signal }, 'shutting down: draining in-flight requests')
    // Metrics stay readable while the traffic drains: the last scrape sees it end.
    await verify?.close()
    await gateway.close()
    await metrics?.close()
  })
  // Metrics first: a port that cannot be bound stops the start before any traffic is taken.
  if (metrics !== null && config.metrics !== null) await metrics.listen({ host: config.metrics.host, port: config.metrics.port })
  if (verify !== null && config.verify != null) await verify.listen({ host: config.verify.host, port: config.verify.port })
  await gateway.listen({ host: config.host, port: config.port })
}
