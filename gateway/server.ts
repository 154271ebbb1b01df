import cluster from 'node:cluster'
import { ConfigError } from '../common/config.js'
import { useLogFormat } from '../common/log-destination.js'
import { loadGatewayConfig } from './config.js'
import { WORKER_MARKER } from './workers/protocol.js'

/**
 * Runs the gateway from its environment: one process (GATEWAY_WORKERS=1), or a primary
 * that supervises that many workers, each of which runs this file again. The roles are
 * imported on demand, so that the primary never loads the gateway app it does not run.
 */
async function main (): Promise<void> {
  try {
    const config = loadGatewayConfig()
    useLogFormat(config.logFormat ?? 'json')
    if (cluster.isWorker && process.env[WORKER_MARKER] === '1') {
      await (await import('./workers/worker.js')).runWorker(config)
    } else if (config.workers > 1) {
      await (await import('./workers/primary.js')).runPrimary(config)
    } else {
      await (await import('./single-process.js')).runSingleProcess(config)
    }
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`)
      process.exit(78) // EX_CONFIG
    }
    throw err
  }
}

await main()
