import closeWithGrace from 'close-with-grace'
import { ConfigError } from '../common/config.js'
import { buildGatewayServer, buildMetricsServer } from './app.js'
import { loadGatewayConfig } from './config.js'

/**
 * Runs the gateway: reads the environment, listens (traffic, and metrics on their own
 * private listener), reloads upstreams on SIGHUP, drains on SIGTERM/SIGINT.
 */
async function main (): Promise<void> {
  let config
  let app
  try {
    config = loadGatewayConfig()
    app = await buildGatewayServer(config)
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`)
      process.exit(78) // EX_CONFIG
    }
    throw err
  }
  const gateway = app
  const metrics = config.metrics === null ? null : await buildMetricsServer(config, gateway.portierGateway)
  process.on('SIGHUP', () => { gateway.portierGateway.reload() })
  // SIGHUP means "reload the upstreams" here, not "shut down".
  closeWithGrace({ delay: config.shutdownGraceMs, skip: ['SIGHUP'] }, async ({ signal, err }) => {
    if (err !== undefined) gateway.log.error({ err }, 'shutting down after an error')
    else gateway.log.info({ signal }, 'shutting down: draining in-flight requests')
    // Metrics stay readable while the traffic drains: the last scrape sees it end.
    await gateway.close()
    await metrics?.close()
  })
  // Metrics first: a port that cannot be bound stops the start before any traffic is taken.
  if (metrics !== null && config.metrics !== null) await metrics.listen({ host: config.metrics.host, port: config.metrics.port })
  await gateway.listen({ host: config.host, port: config.port })
}

await main()
