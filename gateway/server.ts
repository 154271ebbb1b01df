import closeWithGrace from 'close-with-grace'
import { ConfigError } from '../common/config.js'
import { buildGatewayServer } from './app.js'
import { loadGatewayConfig } from './config.js'

/** Runs the gateway: reads the environment, listens, reloads upstreams on SIGHUP, drains on SIGTERM/SIGINT. */
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
  process.on('SIGHUP', () => { gateway.portierGateway.reload() })
  // SIGHUP means "reload the upstreams" here, not "shut down".
  closeWithGrace({ delay: config.shutdownGraceMs, skip: ['SIGHUP'] }, async ({ signal, err }) => {
    if (err !== undefined) gateway.log.error({ err }, 'shutting down after an error')
    else gateway.log.info({ signal }, 'shutting down: draining in-flight requests')
    await gateway.close()
  })
  await gateway.listen({ host: config.host, port: config.port })
}

await main()
