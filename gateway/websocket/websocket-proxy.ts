import type { IncomingMessage } from 'node:http'
import httpProxy from '@fastify/http-proxy'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { ClientOptions, WebSocket } from 'ws'
import type { Principal } from '../auth/authenticate.js'
import type { ForwardHeaders } from '../proxy/forward-headers.js'
import type { RoutedRequest } from '../routing/route-request.js'
import type { OpenSockets } from './open-sockets.js'

/** WebSocket close code for a connection idle too long (RFC 6455 §7.4.1: going away). */
const CLOSE_IDLE = 1001

/** The router constraint that sends upgrade requests to the proxy's routes, and every other request to the gateway's catch-all. */
const UPGRADE_CONSTRAINT = 'portierUpgrade'

/** What @fastify/http-proxy decorates its replies with when its WebSocket support is on (it publishes no type for it). */
interface WebSocketProxy {
  wss: { on: (event: 'headers', listener: (headers: string[], request: IncomingMessage) => void) => void }
  handleConnection: (source: WebSocket, request: FastifyRequest, dest: string) => void
}

declare module 'fastify' {
  interface FastifyReply {
    wsProxy?: WebSocketProxy
  }
}

export interface WebSocketOptions {
  /** Largest message either side may send; a larger one closes the connection (1009). */
  maxMessageBytes: number
  /** A connection on which no message passed either way for this long is closed (1001). */
  idleMs: number
}

/** What the WebSocket stage forwards: the upgrade request as checked, and who sent it. */
export interface WebSocketForward {
  request: FastifyRequest
  reply: FastifyReply
  routed: RoutedRequest
  principal: Principal | null
  /** The gateway's own fields of the answer (RateLimit, Deprecation…), as name, value pairs: sent with the 101. */
  answerFields: readonly string[]
}

/** One upgrade the checks let through, as the proxy's callbacks need it. */
interface Upgrade {
  forward: WebSocketForward
  /** The forwarded headers, as the WebSocket client takes them. */
  headers: Record<string, string | string[]>
}

/** Handshake headers of the client's, which only its own connection to the gateway means. */
const HANDSHAKE_HEADER = /^sec-websocket-/

function headersObject (flat: readonly string[]): Record<string, string | string[]> {
  const headers: Record<string, string | string[]> = {}
  for (let i = 0; i + 1 < flat.length; i += 2) {
    const name = flat[i]
    const value = flat[i + 1]
    if (name === undefined || value === undefined || HANDSHAKE_HEADER.test(name)) continue
    const existing = headers[name]
    headers[name] = existing === undefined ? value : [...[existing].flat(), value]
  }
  return headers
}

/** The credential the request presented, as the headers a check again would read. */
function credentialOf (request: FastifyRequest): { 'x-api-key': string } | { authorization: string } {
  const key = request.headers['x-api-key']
  return typeof key === 'string' ? { 'x-api-key': key } : { authorization: request.headers.authorization ?? '' }
}

/** Whether Node handed the request over as an upgrade (a WebSocket handshake), not as a request to answer. */
export function isUpgrade (message: IncomingMessage): boolean {
  return 'upgrade' in message && message.upgrade === true
}

/** How the upgrade constraint keeps its routes' handlers: by value (`websocket` is the one used). */
function upgradeStorage<H> () {
  const stored = new Map<unknown, H>()
  return { get: (value: unknown): H | null => stored.get(value) ?? null, set: (value: unknown, handler: H): void => { stored.set(value, handler) } }
}

/**
 * A stage that hands an upgrade to the proxy once it passed every check before it; the
 * proxy's own handler then takes it (`handOver`).
 */
export type WebSocketStage = (forward: WebSocketForward, handOver: () => void) => void

/**
 * WebSocket routes, on @fastify/http-proxy's WebSocket support. The proxy's upgrade
 * listener sends every upgrade request through the router, where a constraint gives
 * upgrades (GET) to the proxy's own routes and everything else to the gateway's
 * catch-all. Before the proxy's handler, `check` (the request path) runs the same
 * stages as for any request: route, credential, permission, traffic; a refusal is
 * answered there, and an upgrade to a route that is not a WebSocket route is answered as
 * an ordinary request. A WebSocket route's upgrade is then handed to the proxy with its
 * checked upstream path: the proxy completes the handshake (the 101 carries the request
 * id and the gateway's own fields) and opens the upstream's WebSocket with the forwarded
 * headers, the principal's among them. Each connection is tracked by whom it acts for
 * (open-sockets.ts) until it closes, so that a revoked key or an ended session closes
 * it; a message larger than `maxMessageBytes` either way closes it (1009), and so does
 * `idleMs` without a message either way (1001).
 */
export async function registerWebSocketProxy (app: FastifyInstance, options: WebSocketOptions & {
  forwardHeaders: ForwardHeaders
  openSockets: OpenSockets
  /** The request path, run before the proxy's handler; `handOver` lets the proxy take the upgrade. */
  check: (request: FastifyRequest, reply: FastifyReply, handOver: () => void) => void
}): Promise<WebSocketStage> {
  // By request: the proxy's callbacks are given the request it was handed (typed for any server).
  const upgrades = new WeakMap<object, Upgrade>()
  const upgradesByRaw = new WeakMap<IncomingMessage, Upgrade>()
  /** Each client socket's last message either way, on the monotonic clock. */
  const activity = new WeakMap<WebSocket, { lastMessageAt: number }>()
  let wrapped = false

  /** A message passed on `source`'s connection: one clock read, no timer touched. */
  function active (source: WebSocket): void {
    const seen = activity.get(source)
    if (seen !== undefined) seen.lastMessageAt = performance.now()
  }

  /**
   * Closes `source` once `idleMs` passed without a message either way. The timer is not
   * reset per message (that is a timer-list operation on every message, either way):
   * when it fires early, it is set again for what is left since the last message.
   */
  function closeWhenIdle (source: WebSocket, close: (code: number, reason: string) => void): () => void {
    const seen = { lastMessageAt: performance.now() }
    activity.set(source, seen)
    let timer: NodeJS.Timeout
    const check = (): void => {
      const left = seen.lastMessageAt + options.idleMs - performance.now()
      if (left <= 0) close(CLOSE_IDLE, 'idle')
      else timer = setTimeout(check, left).unref()
    }
    timer = setTimeout(check, options.idleMs).unref()
    return () => { clearTimeout(timer) }
  }

  /** Starts the idle timer and the tracking of a connection the proxy has just accepted. */
  function track (source: WebSocket, upgrade: Upgrade): void {
    const { forward } = upgrade
    const close = (code: number, reason: string): void => { source.close(code, reason) }
    const stopIdleTimer = closeWhenIdle(source, close)
    const forget = forward.principal === null
      ? null
      : options.openSockets.add({ route: forward.routed.route, principal: forward.principal, credential: credentialOf(forward.request), close })
    source.once('close', () => {
      stopIdleTimer()
      forget?.()
    })
  }

  /** What the proxy does with each connection and handshake, wrapped the first time it is reached. */
  function wrap (proxy: WebSocketProxy): void {
    if (wrapped) return
    wrapped = true
    const connect = proxy.handleConnection.bind(proxy)
    // The proxy calls this for each connection it accepts: where the gateway learns which client socket is which request's.
    proxy.handleConnection = (source, request, dest) => {
      const upgrade = upgrades.get(request)
      if (upgrade !== undefined) track(source, upgrade)
      connect(source, request, dest)
    }
    proxy.wss.on('headers', (headers, request) => {
      const upgrade = upgradesByRaw.get(request)
      if (upgrade === undefined) return
      headers.push(`x-request-id: ${upgrade.forward.request.id}`)
      const fields = upgrade.forward.answerFields
      for (let i = 0; i + 1 < fields.length; i += 2) headers.push(`${fields[i] ?? ''}: ${fields[i + 1] ?? ''}`)
    })
  }

  app.addConstraintStrategy({
    name: UPGRADE_CONSTRAINT,
    storage: upgradeStorage,
    deriveConstraint: (request: IncomingMessage) => isUpgrade(request) ? 'websocket' : undefined,
    mustMatchWhenDerived: false,
    validate: () => {}
  })

  await app.register(httpProxy, {
    // No fixed upstream: the checked route's, per request.
    upstream: '',
    routes: ['/', '/*'],
    httpMethods: ['GET'],
    constraints: { [UPGRADE_CONSTRAINT]: 'websocket' },
    proxyPayloads: false,
    websocket: true,
    // A host app's own @fastify/swagger would list these as operations.
    config: { swaggerTransform: ({ url }: { url: string }) => ({ schema: { hide: true }, url }) },
    preHandler: (request: FastifyRequest, reply: FastifyReply, done: () => void) => { options.check(request, reply, done) },
    replyOptions: { getUpstream: (request: object) => upgrades.get(request)?.forward.routed.route.upstream.origin ?? '' },
    wsServerOptions: { maxPayload: options.maxMessageBytes },
    wsClientOptions: {
      maxPayload: options.maxMessageBytes,
      rewriteRequestHeaders: (_headers: unknown, request: object) => upgrades.get(request)?.headers ?? {},
      // The query exactly as checked; the proxy puts the `?` in front.
      queryString: (_search: unknown, _url: string, request: object) => upgrades.get(request)?.forward.routed.search.slice(1) ?? ''
    } as ClientOptions,
    wsHooks: {
      onIncomingMessage: (_context, source) => { active(source) },
      onOutgoingMessage: (_context, source) => { active(source) }
    }
  })

  return function forwardWebSocket (forward, handOver) {
    const { request, reply, routed } = forward
    const proxy = reply.wsProxy
    if (proxy === undefined) throw new Error('a WebSocket upgrade reached the gateway outside its WebSocket proxy')
    wrap(proxy)
    const headers = headersObject(options.forwardHeaders(request, {
      keepsAuthorization: false,
      inflected: false,
      principal: forward.principal,
      host: routed.host
    }))
    const upgrade = { forward, headers }
    upgrades.set(request, upgrade)
    upgradesByRaw.set(request.raw, upgrade)
    // The proxy opens the upstream at the request's URL: the checked upstream path and query.
    request.raw.url = routed.upstreamPath + routed.search
    // What the access line and the request count say of it.
    reply.raw.statusCode = 101
    handOver()
  }
}
