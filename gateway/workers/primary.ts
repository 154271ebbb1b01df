import { createLogger } from '../../common/logger.js'
import type { GatewayServerConfig } from '../config.js'
import { buildMetricsServer } from '../observability/metrics-server.js'
import { clusterMetricsSource, createSupervisionMetrics } from './metrics.js'
import { createSupervisor, StartFailure } from './supervisor.js'

/**
 * The primary of a clustered gateway (GATEWAY_WORKERS > 1). It serves no traffic and
 * loads none of the gateway app: it holds the listening socket node:cluster shares,
 * serves the private metrics listener with every worker's counts summed, forwards
 * SIGHUP to the workers, and on SIGTERM/SIGINT drains them all and exits once they have.
 */
export async function runPrimary (config: GatewayServerConfig & { workers: number }): Promise<void> {
  const log = createLogger({ level: config.logLevel, name: 'gateway-primary' })
  const supervision = createSupervisionMetrics(() => supervisor.listening())
  const supervisor = createSupervisor({
    workers: config.workers,
    log,
    onRestart: () => { supervision.restarts.inc() },
    onGiveUp: () => { supervisor.kill(); process.exit(1) }
  })
  const metrics = config.metrics === null
    ? null
    : await buildMetricsServer(config, { metrics: { registry: clusterMetricsSource(supervision.registry) } })

  let shuttingDown = false
  const shutDown = (signal: NodeJS.Signals): void => {
    if (shuttingDown) {
      log.error({ signal }, 'second signal: killing the workers')
      supervisor.kill()
      process.exit(1)
    }
    shuttingDown = true
    log.info({ signal, workers: config.workers }, 'shutting down: draining every worker')
    void (async () => {
      const clean = await supervisor.stop(config.shutdownGraceMs)
      await metrics?.close()
      log.info({ clean }, 'every worker has exited')
      process.exit(clean ? 0 : 1)
    })()
  }
  process.on('SIGTERM', shutDown)
  process.on('SIGINT', shutDown)
  process.on('SIGHUP', () => {
    log.info('SIGHUP: every worker reloads the upstreams file')
    supervisor.order({ type: 'portier:reload-upstreams' })
  })

  // Metrics first: a port that cannot be bound stops the start before any worker exists.
  if (metrics !== null && config.metrics !== null) await metrics.listen({ host: config.metrics.host, port: config.metrics.port })
  try {
    await supervisor.start()
  } catch (err) {
    if (!(err instanceof StartFailure)) throw err
    // A shutdown ordered during the start ends it its own way.
    if (supervisor.stopping()) return
    log.fatal({ worker: err.slot, code: err.exitCode }, 'a worker failed to start: stopping')
    await supervisor.stop(0)
    await metrics?.close()
    process.exit(err.exitCode)
  }
}
