import { Agent, Pool, type Dispatcher } from 'undici'
import { dispatchDeadline } from '../dispatch-deadline.js'
import type { UpstreamPoolSettings } from '../routing/live-table.js'

/** How long an idle pooled connection to an upstream is kept. */
const KEEP_ALIVE_TIMEOUT_MS = 10_000

/**
 * The gateway's connections to its upstreams (undici): one pool per origin, sized and
 * with the connect timeout its upstream's config gives when the pool is created (an
 * origin two upstreams share takes the first one's), keep-alive 10 s. Every request's
 * `headersTimeout` (its upstream's responseMs) counts from the moment the gateway
 * dispatches it (gateway/dispatch-deadline.ts): a request queued behind the origin's
 * busy connections gets its 504 on time, not when the queue drains.
 */
export function createUpstreamAgent (settingsOf: (origin: string) => UpstreamPoolSettings): { agent: Agent, dispatcher: Dispatcher } {
  const agent = new Agent({
    keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS,
    factory: (origin, options) => {
      const settings = settingsOf(String(origin))
      return new Pool(origin, { ...options, connections: settings.connections, connect: { timeout: settings.connectTimeoutMs } })
    }
  })
  return { agent, dispatcher: agent.compose(dispatchDeadline('headers')) }
}
