import closeWithGrace from 'close-with-grace'
import { AggregatorRegistry } from 'prom-client'
import { buildGatewayServer } from '../app.js'
import type { GatewayServerConfig } from '../config.js'
import { buildVerifyServer } from '../verify/server.js'
import { isPrimaryOrder } from './protocol.js'

/**
 * One worker of a clustered gateway: the whole gateway app (its own L1 caches, its own
 * Redis connections) on the port the primary shares, without a metrics listener of its
 * own: it answers the primary's metrics requests instead. It drains on the primary's
 * order or on a SIGTERM sent to it alone, and reloads the upstreams on the primary's
 * order; a signal the whole process group received is left to the primary.
 */
export async function runWorker (config: GatewayServerConfig): Promise<void> {
  let drain: (() => void) | null = null
  let drainOrdered = false
  let reload: (() => void) | null = null
  let reloadOrdered = false
  const onDrain = (): void => { if (drain !== null) drain(); else drainOrdered = true }
  // Installed before the app is built: an order that arrives while it starts is kept, not lost.
  process.on('message', (message) => {
    if (!isPrimaryOrder(message)) return
    if (message.type === 'portier:drain') onDrain()
    else if (reload !== null) reload()
    else reloadOrdered = true
  })
  process.on('SIGTERM', onDrain)
  process.on('SIGINT', () => {})
  process.on('SIGHUP', () => {})
  // Constructing one is how prom-client starts answering the primary's metrics requests
  // (AggregatorRegistry.clusterMetrics): at once, so that a scrape while this worker
  // starts gets its empty registry instead of waiting for it and timing out.
  void new AggregatorRegistry()

  const gateway = await buildGatewayServer(config)
  // Each worker answers the verify listener too, on the port the primary shares, with its own decision (and caches).
  const verify = config.verify == null ? null : await buildVerifyServer({ ...config.verify, logLevel: config.logLevel, ...(config.timeouts !== undefined ? { timeouts: config.timeouts } : {}) }, gateway.portierGateway)
  AggregatorRegistry.setRegistries(gateway.portierGateway.metrics.registry)

  // Signals are the worker's own above: close-with-grace keeps only the error events, and the grace.
  const closer = closeWithGrace({ delay: config.shutdownGraceMs, skip: ['SIGHUP', 'SIGINT', 'SIGTERM'] }, async ({ err }) => {
    if (err !== undefined) gateway.log.error({ err }, 'shutting down after an error')
    else gateway.log.info('shutting down: draining in-flight requests')
    await verify?.close()
    await gateway.close()
  })
  let draining = false
  drain = () => {
    if (draining) return
    draining = true
    void closer.close()
  }
  reload = () => { gateway.portierGateway.reload() }
  if (drainOrdered) { drain(); return }
  // The file may have changed after this worker read it and before it could hear the order.
  if (reloadOrdered) reload()
  if (verify !== null && config.verify != null) await verify.listen({ host: config.verify.host, port: config.verify.port })
  await gateway.listen({ host: config.host, port: config.port })
}
