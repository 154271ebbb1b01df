import type { LoadJob } from '../load/job.js'
import type { ScenarioResult } from '../report/types.js'
import { alternate, pairedMedian, type VariantSpec } from '../rounds.js'
import { formatRatio } from '../report/format.js'
import { WEBSOCKET_PATH } from '../upstreams.js'
import { judge, type BenchContext } from './context.js'
import { apiKey } from './static-variants.js'

/** What every connection sends and gets back: a small JSON message, as a chat or a feed would. */
const MESSAGE = JSON.stringify({ type: 'ping', channel: 'orders', sequence: 1 })

/**
 * WebSocket echo through the gateway against the static upstream's echo directly:
 * messages per second over `connections` sockets, each waiting for its echo before it
 * sends again. The gateway's WebSocket route authenticates the upgrade once (an API
 * key), then every message passes through @fastify/http-proxy's WebSocket proxy. The
 * same plugin alone (the bare proxy with its WebSocket support on) runs beside them, so
 * the report can tell what relaying costs from what the gateway adds to it.
 */
export async function websocketEcho (ctx: BenchContext): Promise<ScenarioResult> {
  const { stack, connections } = ctx
  const job = (url: string, headers: Record<string, string>): LoadJob =>
    ({ url, method: 'GET', headers, connections, durationSeconds: 0, websocketMessage: MESSAGE })
  const specs: VariantSpec[] = [
    { id: 'websocket-direct', label: 'direct to the static upstream\'s echo', role: 'baseline', job: () => job(`${stack.upstream.url}${WEBSOCKET_PATH}`, {}) },
    { id: 'websocket-bare', label: 'bare WebSocket proxy (Fastify + @fastify/http-proxy, websocket on)', role: 'reference', pid: stack.bareWebSocket.pid, job: () => job(`${stack.bareWebSocket.url}${WEBSOCKET_PATH}`, {}) },
    { id: 'websocket-gateway', label: 'gateway, API key', role: 'candidate', pid: stack.gateway.pid, job: () => job(`${stack.gateway.url}${WEBSOCKET_PATH}`, apiKey(ctx)) }
  ]
  ctx.say(`WebSocket echo: ${specs.map((s) => s.id).join(', ')}`)
  const variants = await alternate(ctx.driver, specs, ctx.rounds)
  const roundsOf = (id: string) => variants.find((v) => v.id === id)?.rounds ?? []
  const bareRatio = pairedMedian(roundsOf('websocket-bare'), roundsOf('websocket-direct'), (b, d) => b.requestsPerSecond / d.requestsPerSecond)
  const againstBare = pairedMedian(roundsOf('websocket-gateway'), roundsOf('websocket-bare'), (g, b) => g.requestsPerSecond / b.requestsPerSecond)
  return judge({
    id: 'websocket-echo',
    title: 'WebSocket echo, messages/s through the gateway',
    request: `a ${MESSAGE.length}-byte text message and its echo, ${connections} connections, one message in flight on each`,
    variants,
    candidate: 'websocket-gateway',
    target: { description: '≥ 0.80 × direct', against: 'websocket-direct', minThroughputRatio: 0.8 },
    notes: [`The bare WebSocket proxy reaches ${formatRatio(bareRatio)} × direct; the gateway ${formatRatio(againstBare)} × the bare WebSocket proxy. Every message is relayed twice (there and back) by a process that shares the machine with the load and the upstream.`]
  })
}
