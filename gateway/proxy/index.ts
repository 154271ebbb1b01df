import httpProxy from '@fastify/http-proxy'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { IncomingHttpHeaders } from 'node:http'
import type { Readable } from 'node:stream'
import { Agent, Pool, type Dispatcher } from 'undici'
import { sendProblem, type PortierProblem } from '../../common/problem.js'
import { dispatchDeadline } from '../dispatch-deadline.js'
import { GatewayProblems } from '../errors.js'
import type { GatewayMetrics } from '../observability/metrics.js'
import type { GateDecision } from '../request-gate.js'
import { refuseBodyMethodOverride } from '../method-override.js'
import { createForwardHeaders } from './forward-headers.js'
import type { SpellingBook } from '../inflection/index.js'
import { sendInflectedResponse } from './inflected-response.js'
import { canDecode, isJsonContentType, rewriteRequestBody } from './json-bodies.js'
import { refusedRequestHeader } from './request-faults.js'

export interface ProxyOptions {
  decisionOf: (request: FastifyRequest) => GateDecision
  metrics: GatewayMetrics
  /** What the gateway has learned of each upstream's member names. */
  spellings: SpellingBook
  maxInflectionDepth: number
  maxInflectedResponseBytes: number | undefined
  inflectedResponseHoldBytes: number
  maxInflectedRequestMembers: number
  maxInflectedResponseMembers: number | undefined
  /** Connect timeout for an upstream origin, read when its connection pool is created. */
  connectTimeoutMs: (origin: string) => number
  /** Request header names with characters other than letters, digits and `-` that are forwarded anyway. */
  allowedUnusualHeaders: readonly string[]
}

const BODYLESS_STATUSES = new Set([204, 205, 304])
const STATUS_CLASSES = ['0xx', '1xx', '2xx', '3xx', '4xx', '5xx']

/** Characters an HTTP field value may hold (RFC 9110 §5.5): HTAB, visible ASCII and space, obs-text. */
const NOT_FIELD_VALUE = /[^\t\x20-\x7E\x80-\xFF]/
const NOT_FIELD_VALUES = new RegExp(NOT_FIELD_VALUE.source, 'g')

/** An upstream's header values with anything a field value may not hold removed, so that sending them cannot throw. */
function sanitizeHeaderValues (headers: IncomingHttpHeaders): IncomingHttpHeaders {
  for (const name in headers) {
    const value = headers[name]
    if (typeof value === 'string') {
      if (NOT_FIELD_VALUE.test(value)) headers[name] = value.replace(NOT_FIELD_VALUES, '')
    } else if (Array.isArray(value)) headers[name] = value.map((item) => item.replace(NOT_FIELD_VALUES, ''))
  }
  return headers
}

const RATE_LIMIT_FIELDS = ['ratelimit', 'ratelimit-policy', 'x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset'] as const

/** Appends to Vary rather than replacing what the upstream said its answer varies by. */
export function addVary (reply: FastifyReply, header: string): void {
  const current = reply.getHeader('vary')
  if (current === undefined) reply.header('vary', header)
  else if (!String(current).toLowerCase().split(/\s*,\s*/).includes(header)) reply.header('vary', `${String(current)}, ${header}`)
}

/**
 * Per-origin connection pools (undici) whose connect timeout comes from that upstream's
 * config. Each request's responseMs (reply-from passes it as headersTimeout) counts from
 * the moment the gateway starts the call: a request queued behind the origin's busy
 * connections gets its 504 on time, not when the queue drains.
 */
function createUpstreamAgent (connectTimeoutMs: (origin: string) => number): { agent: Agent, dispatcher: Dispatcher } {
  const agent = new Agent({
    keepAliveTimeout: 10_000,
    connections: 128,
    connect: {},
    factory: (origin, options) => new Pool(origin, { ...options, connect: { timeout: connectTimeoutMs(String(origin)) } })
  } as ConstructorParameters<typeof Agent>[0])
  return { agent, dispatcher: agent.compose(dispatchDeadline('headers')) }
}

/**
 * Proxies every gated request with @fastify/http-proxy (on @fastify/reply-from and
 * undici). The gate has already chosen the upstream and the exact, normalised path;
 * the handler sends that path, never the raw URL, so the path that was authorised
 * is the path the upstream serves. JSON request bodies are converted to the
 * upstream's native case and JSON responses to the client's, when asked.
 */
export async function registerProxy (app: FastifyInstance, options: ProxyOptions): Promise<void> {
  const { decisionOf, metrics } = options
  const forwardHeaders = createForwardHeaders({ allowedUnusualHeaders: options.allowedUnusualHeaders })
  const { agent, dispatcher } = createUpstreamAgent(options.connectTimeoutMs)
  app.addHook('onClose', async () => { await agent.close() })

  function respond (request: FastifyRequest, reply: FastifyReply, res: { statusCode: number, stream: Readable }): void {
    const decision = decisionOf(request)
    metrics.upstreamDuration.observe({ upstream: decision.route.upstream.name, status_class: STATUS_CLASSES[Math.floor(res.statusCode / 100)] ?? 'other' },
      (performance.now() - decision.sentAt) / 1000)
    // Without inflection (most requests) the body is piped as it comes, looked at no further.
    const encoding = decision.inflection === null ? '' : String(reply.getHeader('content-encoding') ?? '').trim().toLowerCase()
    if (decision.inflection === null || !isJsonContentType(reply.getHeader('content-type')) || request.method === 'HEAD' ||
      BODYLESS_STATUSES.has(res.statusCode) || !canDecode(encoding)) {
      reply.send(res.stream)
      return
    }
    const upstream = decision.route.upstream
    sendInflectedResponse(reply, res.stream, {
      table: options.spellings.of(upstream).responseTable(decision.inflection),
      encoding: encoding === 'identity' ? '' : encoding,
      maxDepth: options.maxInflectionDepth,
      maxMembers: options.maxInflectedResponseMembers,
      maxBytes: options.maxInflectedResponseBytes,
      holdBytes: options.inflectedResponseHoldBytes,
      upstreamName: upstream.name
    })
  }

  function upstreamFailed (request: FastifyRequest, reply: FastifyReply, error: { statusCode?: number, code?: string }): void {
    const refused = refusedRequestHeader(error)
    if (refused !== null) {
      request.log.info({ reason: refused }, 'request header not forwardable')
      sendProblem(reply, GatewayProblems.headerNotForwardable([refused]))
      return
    }
    const upstream = decisionOf(request).route.upstream
    const timedOut = error.statusCode === 504
    request.log.warn({ upstream: upstream.name, code: error.code }, timedOut ? 'upstream timed out' : 'upstream unreachable')
    const problem: PortierProblem = timedOut
      ? GatewayProblems.upstreamTimeout([upstream.name, upstream.timeouts.responseMs])
      : GatewayProblems.upstreamUnavailable([upstream.name])
    sendProblem(reply, problem)
  }

  function upstreamFailedReply (reply: FastifyReply, { error }: { error: unknown }): void {
    upstreamFailed(reply.request, reply, error as { statusCode?: number, code?: string })
  }

  const upstreamOrigin = (request: FastifyRequest): string => decisionOf(request).route.upstream.origin

  // What reply-from is told for every request to one upstream, built once per upstream
  // (a reload builds new upstream objects, so the cache follows the table in force).
  const fromOptionsByUpstream = new WeakMap<GateDecision['route']['upstream'], Record<string, unknown>>()
  function fromOptionsOf (upstream: GateDecision['route']['upstream']): Record<string, unknown> {
    let fromOptions = fromOptionsByUpstream.get(upstream)
    if (fromOptions === undefined) {
      fromOptions = {
        getUpstream: upstreamOrigin,
        // The query exactly as the client sent it (checked by the gate), never re-encoded.
        queryString: (_search: string, _url: string, request: FastifyRequest) => decisionOf(request).search.slice(1),
        timeout: upstream.timeouts.responseMs,
        // One attempt: retrying a request the upstream may have acted on is not the gateway's call.
        retryDelay: () => null,
        rewriteRequestHeaders: (request: FastifyRequest, headers: IncomingHttpHeaders) => forwardHeaders(request, decisionOf(request), headers),
        // As @fastify/http-proxy does: a header value the upstream should not have sent is cleaned, not a crash.
        rewriteHeaders: (headers: IncomingHttpHeaders, request: FastifyRequest) => {
          // The gateway's own RateLimit fields describe the policies it enforced; an upstream's would replace them.
          if (decisionOf(request).rateLimitFields) for (const name of RATE_LIMIT_FIELDS) delete headers[name]
          return sanitizeHeaderValues(headers)
        },
        onResponse: (request: FastifyRequest, reply: FastifyReply, res: { statusCode: number, stream: Readable }) => { respond(request, reply, res) },
        onError: upstreamFailedReply
      }
      fromOptionsByUpstream.set(upstream, fromOptions)
    }
    return fromOptions
  }

  function proxyHandler (request: FastifyRequest, reply: FastifyReply): FastifyReply {
    const decision = decisionOf(request)
    const upstream = decision.route.upstream
    let body = request.body as Buffer | undefined
    if (body !== undefined && body.length > 0 && decision.inflection !== null) {
      body = rewriteRequestBody(body, options.spellings.of(upstream).requestTable(decision.inflection), options.maxInflectionDepth,
        options.maxInflectedRequestMembers)
    }
    if (body !== undefined && body.length > 0) refuseBodyMethodOverride(body)
    decision.sentAt = performance.now()
    const fromOptions = fromOptionsOf(upstream)
    // The path alone: reply-from decodes it to look for `..`, so a query value (`?next=/..`, `?q=%`) must not be in it.
    return reply.from(decision.upstreamPath, (body !== undefined
      ? { ...fromOptions, body, contentType: String(request.headers['content-type']) }
      : fromOptions) as Parameters<FastifyReply['from']>[1])
  }

  await app.register(httpProxy, {
    // No fixed upstream: the gate picks one per request (config can change on reload).
    upstream: '',
    prefix: '/',
    // A preValidation hook stops http-proxy from installing its catch-all body parsers: ours read JSON only.
    preValidation: (_request: FastifyRequest, _reply: FastifyReply, done: () => void) => { done() },
    undici: dispatcher as unknown as Record<string, unknown>,
    disableRequestLogging: true,
    // A host app's own @fastify/swagger would list these catch-alls as operations; the
    // gateway documents its routes itself (gateway/docs/).
    config: { swaggerTransform: ({ url }: { url: string }) => ({ schema: { hide: true }, url }) },
    // http-proxy needs one without a fixed upstream; our handler passes its own options whole.
    replyOptions: { getUpstream: upstreamOrigin },
    // Called with http-proxy's options for the request, which our own (per upstream) replace whole.
    handler: proxyHandler
  } as never)
}
