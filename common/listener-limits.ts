import { Type, type TInteger } from 'typebox'
import { DEFAULT_UNREAD_BODY_LIMITS, type UnreadBodyLimits } from './unread-body.js'

/**
 * How long a client may take over a request, and how long an idle connection is kept,
 * for every Portier listener: a client that stalls (or drips a byte at a time) holds a
 * socket, a parser and whatever body it has sent, so every one of those waits ends.
 *
 * - headers: from the first byte of a request to the end of its header block;
 * - request: from the first byte to the last byte of its body, whatever the pace
 *   (a slow drip is cut like a stall); the answer is not counted, so a slow upstream
 *   is bounded by its own timeout, not this one;
 * - keep-alive: how long a connection waits, idle, for its next request.
 * A request cut by the first two is answered `408 request_timeout` when an answer can
 * still be written, and its connection is closed.
 */
export interface ListenerTimeouts {
  headersMs: number
  requestMs: number
  keepAliveMs: number
}

export const DEFAULT_HEADERS_TIMEOUT_MS = 10_000
export const DEFAULT_REQUEST_TIMEOUT_MS = 30_000
export const DEFAULT_KEEP_ALIVE_TIMEOUT_MS = 5_000
/**
 * Request body bytes held in memory at once, per service (identity's two listeners share
 * one), before new ones are refused. A body's bytes were read from its socket into
 * buffers of their own, garbage once copied until the collector runs, so the memory
 * bodies cost can reach about twice this: 16 MiB keeps it well under 64 MiB.
 */
export const DEFAULT_BUFFERED_BODIES_MAX_BYTES = 16 * 1024 * 1024
/** The smallest such budget a service accepts: 64 KiB. */
export const MIN_BUFFERED_BODIES_MAX_BYTES = 65_536

export const DEFAULT_LISTENER_TIMEOUTS: Readonly<ListenerTimeouts> = Object.freeze({
  headersMs: DEFAULT_HEADERS_TIMEOUT_MS,
  requestMs: DEFAULT_REQUEST_TIMEOUT_MS,
  keepAliveMs: DEFAULT_KEEP_ALIVE_TIMEOUT_MS
})

const MAX_TIMEOUT_MS = 3_600_000
/**
 * Node checks the header and request timeouts on a timer (30 s by default), so a
 * request could outlive its timeout by that much; checking every tenth of the shortest
 * timeout, between these bounds, cuts it within 10 % (at most 1 s) of the configured time.
 */
const MIN_CHECK_INTERVAL_MS = 50
const MAX_CHECK_INTERVAL_MS = 1_000

/** The node:http server settings that enforce `timeouts` (Fastify passes them to http.createServer). */
export function httpServerTimeouts (timeouts: ListenerTimeouts) {
  const shortest = Math.min(timeouts.headersMs, timeouts.requestMs)
  return {
    headersTimeout: timeouts.headersMs,
    requestTimeout: timeouts.requestMs,
    keepAliveTimeout: timeouts.keepAliveMs,
    connectionsCheckingInterval: Math.min(MAX_CHECK_INTERVAL_MS, Math.max(MIN_CHECK_INTERVAL_MS, Math.floor(shortest / 10)))
  }
}

const ENV_SUFFIXES = ['HEADERS_TIMEOUT_MS', 'REQUEST_TIMEOUT_MS', 'KEEP_ALIVE_TIMEOUT_MS', 'BUFFERED_BODIES_MAX_BYTES', 'UNREAD_BODY_DRAIN_MAX_BYTES', 'LINGER_MS', 'LINGER_MAX_BYTES'] as const
type ListenerEnvName<P extends string> = `${P}_${typeof ENV_SUFFIXES[number]}`

/**
 * The environment variables of one service's listener limits, named `<PREFIX>_…`, so
 * that the gateway, identity and the mock spell them alike. `listeners` names whose
 * limits they are, for the descriptions.
 */
export function listenerEnvProperties<P extends string> (prefix: P, listeners: string): Record<ListenerEnvName<P>, TInteger> {
  const properties: Record<typeof ENV_SUFFIXES[number], TInteger> = {
    HEADERS_TIMEOUT_MS: Type.Integer({ minimum: 100, maximum: MAX_TIMEOUT_MS, default: DEFAULT_HEADERS_TIMEOUT_MS, description: `Longest time a client may take to send a request's headers to ${listeners} (408, connection closed).` }),
    REQUEST_TIMEOUT_MS: Type.Integer({ minimum: 100, maximum: MAX_TIMEOUT_MS, default: DEFAULT_REQUEST_TIMEOUT_MS, description: `Longest time a client may take to send a whole request, body included, to ${listeners} (408, connection closed); at least the headers timeout.` }),
    KEEP_ALIVE_TIMEOUT_MS: Type.Integer({ minimum: 100, maximum: MAX_TIMEOUT_MS, default: DEFAULT_KEEP_ALIVE_TIMEOUT_MS, description: `How long an idle keep-alive connection to ${listeners} is kept open.` }),
    BUFFERED_BODIES_MAX_BYTES: Type.Integer({ minimum: MIN_BUFFERED_BODIES_MAX_BYTES, default: DEFAULT_BUFFERED_BODIES_MAX_BYTES, description: `Request body bytes ${listeners} hold in memory across all requests in flight; a body beyond it is refused with 503 (16 MiB).` }),
    UNREAD_BODY_DRAIN_MAX_BYTES: Type.Integer({ minimum: 0, maximum: 16 * 1_048_576, default: DEFAULT_UNREAD_BODY_LIMITS.drainMaxBytes, description: `A request body left unread by an answer of ${listeners} (a refusal) is read and discarded up to this size, and the connection kept; a larger one is answered with Connection: close and a lingering close (64 KiB).` }),
    LINGER_MS: Type.Integer({ minimum: 0, maximum: 60_000, default: DEFAULT_UNREAD_BODY_LIMITS.lingerMs, description: `Longest time a connection to ${listeners} closed after its answer is still read (what the client sends is discarded), so that the client reads the answer rather than a reset.` }),
    LINGER_MAX_BYTES: Type.Integer({ minimum: 0, default: DEFAULT_UNREAD_BODY_LIMITS.lingerMaxBytes, description: `Most bytes read, and discarded, from a connection to ${listeners} closed after its answer (16 MiB).` })
  }
  return Object.fromEntries(ENV_SUFFIXES.map((suffix) => [`${prefix}_${suffix}`, properties[suffix]])) as Record<ListenerEnvName<P>, TInteger>
}

/** Reads the values listenerEnvProperties declared; `problems` names the variables at fault. */
export function listenerLimitsFromEnv<P extends string> (prefix: P, env: Record<ListenerEnvName<P>, number>): {
  timeouts: ListenerTimeouts
  bufferedBodiesMaxBytes: number
  unreadBodies: UnreadBodyLimits
  problems: string[]
} {
  const timeouts = {
    headersMs: env[`${prefix}_HEADERS_TIMEOUT_MS`],
    requestMs: env[`${prefix}_REQUEST_TIMEOUT_MS`],
    keepAliveMs: env[`${prefix}_KEEP_ALIVE_TIMEOUT_MS`]
  }
  return {
    timeouts: Object.freeze(timeouts),
    bufferedBodiesMaxBytes: env[`${prefix}_BUFFERED_BODIES_MAX_BYTES`],
    unreadBodies: Object.freeze({
      drainMaxBytes: env[`${prefix}_UNREAD_BODY_DRAIN_MAX_BYTES`],
      lingerMs: env[`${prefix}_LINGER_MS`],
      lingerMaxBytes: env[`${prefix}_LINGER_MAX_BYTES`]
    }),
    problems: listenerTimeoutProblems(timeouts, { headersMs: `${prefix}_HEADERS_TIMEOUT_MS`, requestMs: `${prefix}_REQUEST_TIMEOUT_MS` })
  }
}

/** Node refuses a headers timeout above the request timeout; so does the configuration, naming both. */
export function listenerTimeoutProblems (timeouts: ListenerTimeouts, names: { headersMs: string, requestMs: string }): string[] {
  return timeouts.headersMs > timeouts.requestMs
    ? [`${names.headersMs}: must not exceed ${names.requestMs} (${timeouts.headersMs} > ${timeouts.requestMs})`]
    : []
}
