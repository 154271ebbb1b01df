import type { FastifyBaseLogger, FastifyReply, FastifyRequest } from 'fastify'
import { errors, type Dispatcher } from 'undici'
import type { PortierProblem } from '../../common/problem.js'
import type { Principal } from '../auth/authenticate.js'
import { GatewayProblems } from '../errors.js'
import type { SpellingBook } from '../inflection/index.js'
import type { UpstreamTimer } from '../observability/upstream-timer.js'
import type { RequestSpan, UpstreamSpan } from '../observability/request-tracing.js'
import type { RoutedRequest } from '../routing/route-request.js'
import { IDENTITY_UPSTREAM_NAME } from '../routing/paths.js'
import type { ResolvedUpstream } from '../routing/index.js'
import { partitionOf } from '../traffic/applied-policies.js'
import type { FairShare } from '../traffic/fair-share.js'
import type { ForwardHeaders } from './forward-headers.js'
import { InflectedResponse } from './inflected-response.js'
import { canDecode, isJsonContentType } from './json-bodies.js'
import { refusedRequestHeader } from './request-faults.js'
import { answerHeaders } from './response-headers.js'

/** Statuses whose answers never carry a body. */
const BODYLESS_STATUSES: ReadonlySet<number> = new Set([204, 205, 304])

export interface ProxyStageOptions {
  /** The gateway's pools to its upstreams (upstream-agent.ts). */
  dispatcher: Dispatcher
  forwardHeaders: ForwardHeaders
  /** What the gateway has learned of each upstream's member names. */
  spellings: SpellingBook
  maxInflectionDepth: number
  maxInflectedResponseBytes: number | undefined
  inflectedResponseHoldBytes: number
  maxInflectedResponseMembers: number | undefined
  upstreamTimer: UpstreamTimer
  /** Each principal's share of each upstream's connections. */
  fairShare: FairShare
  log: FastifyBaseLogger
}

/** What the proxy stage forwards: the request as checked, who sent it, what its answer carries, and its body. */
export interface Forward {
  request: FastifyRequest
  reply: FastifyReply
  routed: RoutedRequest
  principal: Principal | null
  /** The gateway's own fields of the answer (RateLimit, Deprecation…), as name, value pairs. */
  answerFields: readonly string[]
  /** Whether `answerFields` holds RateLimit fields (the upstream's are then dropped). */
  rateLimited: boolean
  body: Buffer | null
  /** The gateway is draining: the answer says `Connection: close`. */
  closing: boolean
  /** The request's spans when it is traced: the call is a CLIENT span of it. */
  trace?: RequestSpan | null
}

/** The problem for an upstream call that failed before its answer began. */
function failureProblem (error: Error, upstream: ResolvedUpstream, log: FastifyBaseLogger): PortierProblem {
  const refused = refusedRequestHeader(error)
  if (refused !== null) {
    log.info({ reason: refused }, 'request header not forwardable')
    return GatewayProblems.headerNotForwardable([refused])
  }
  const timedOut = error instanceof errors.HeadersTimeoutError
  log.warn({ upstream: upstream.name, code: (error as { code?: unknown }).code }, timedOut ? 'upstream timed out' : 'upstream unreachable')
  return timedOut
    ? GatewayProblems.upstreamTimeout([upstream.name, upstream.timeouts.responseMs])
    : GatewayProblems.upstreamUnavailable([upstream.name])
}

/**
 * One call to an upstream, as undici's dispatcher drives it: the answer's status and
 * headers are written to the client as soon as they come, and its body chunk by chunk
 * (paused while the client is slower than the upstream), or through the key rewriter
 * when the client asked for an inflection. The client going away aborts the call.
 */
class UpstreamCall implements Dispatcher.DispatchHandler {
  readonly #forward: Forward
  readonly #options: ProxyStageOptions
  readonly #refuse: (problem: unknown) => void
  readonly #sentAt = performance.now()
  #controller: Dispatcher.DispatchController | null = null
  #inflected: InflectedResponse | null = null
  #over = false

  /** Gives the principal's place in the upstream's pool back, once the call is over. */
  readonly #release: (() => void) | null
  readonly #span: UpstreamSpan | null

  constructor (forward: Forward, options: ProxyStageOptions, refuse: (problem: unknown) => void, release: (() => void) | null, span: UpstreamSpan | null) {
    this.#forward = forward
    this.#options = options
    this.#refuse = refuse
    this.#release = release
    this.#span = span
    forward.reply.raw.once('close', () => {
      if (!this.#over) this.#controller?.abort(new Error('the client went away'))
      this.#end()
    })
  }

  /** The call is over: nothing more reaches the client from it. `error` when it failed. */
  #end (error?: Error): void {
    this.#over = true
    this.#release?.()
    this.#span?.end(error)
  }

  onRequestStart (controller: Dispatcher.DispatchController): void {
    this.#controller = controller
    if (this.#over) controller.abort(new Error('the client went away'))
  }

  onResponseStart (controller: Dispatcher.DispatchController, statusCode: number, headers: Record<string, string | string[] | undefined>): void {
    if (this.#over) return
    const { routed, request } = this.#forward
    const response = this.#forward.reply.raw
    const upstream = routed.route.upstream
    this.#options.upstreamTimer.observe(upstream, statusCode, (performance.now() - this.#sentAt) / 1000)
    this.#span?.answered(statusCode)
    if (statusCode < 200 || statusCode > 599) {
      // Not an answer a client can be given: as a broken upstream.
      this.#end()
      controller.abort(new Error(`the upstream answered status ${statusCode}`))
      this.#refuse(GatewayProblems.upstreamUnavailable([upstream.name]))
      return
    }
    const style = routed.style
    const encoding = style === null ? '' : String(headers['content-encoding'] ?? '').trim().toLowerCase()
    const inflected = style !== null && isJsonContentType(headers['content-type']) && request.method !== 'HEAD' &&
      !BODYLESS_STATUSES.has(statusCode) && canDecode(encoding)
    const answer = answerHeaders(headers, {
      requestId: request.id,
      own: this.#forward.answerFields,
      rateLimited: this.#forward.rateLimited,
      inflected,
      closing: this.#forward.closing,
      gatewayCors: routed.route.cors !== undefined
    })
    if (!inflected) {
      response.writeHead(statusCode, answer)
      return
    }
    const options = this.#options
    this.#inflected = new InflectedResponse(response, statusCode, answer, {
      table: options.spellings.of(upstream).responseTable(style),
      encoding: encoding === 'identity' ? '' : encoding,
      maxDepth: options.maxInflectionDepth,
      maxMembers: options.maxInflectedResponseMembers,
      maxBytes: options.maxInflectedResponseBytes,
      holdBytes: options.inflectedResponseHoldBytes,
      upstreamName: upstream.name
    }, {
      refuse: (problem) => {
        this.#end()
        controller.abort(new Error('the upstream body cannot be inflected'))
        this.#refuse(problem)
      },
      pause: () => { controller.pause() },
      resume: () => { controller.resume() }
    })
  }

  onResponseData (controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.#over) return
    if (this.#inflected !== null) {
      this.#inflected.write(chunk)
      return
    }
    const response = this.#forward.reply.raw
    if (!response.write(chunk)) {
      controller.pause()
      response.once('drain', () => { controller.resume() })
    }
  }

  onResponseEnd (): void {
    if (this.#over) return
    this.#end()
    if (this.#inflected !== null) this.#inflected.end()
    else this.#forward.reply.raw.end()
  }

  onResponseError (_controller: Dispatcher.DispatchController, error: Error): void {
    this.fail(error)
  }

  /** The call failed: before the answer began (a problem instead), or during it (cut). */
  fail (error: Error): void {
    if (this.#over) return
    this.#end(error)
    const { routed } = this.#forward
    const response = this.#forward.reply.raw
    if (this.#inflected !== null) this.#inflected.fail()
    else if (!response.headersSent) this.#refuse(failureProblem(error, routed.route.upstream, this.#options.log))
    // Cut, as the upstream's answer was: a client reading it sees a network error, never a body that parses.
    else response.destroy(error)
  }
}

/**
 * The proxy stage: the request, checked, goes to its upstream with exactly the path
 * that was authorised (the query as the client sent it), the forwarded headers
 * (forward-headers.ts) and the body as the upstream reads it; the answer comes back
 * with the upstream's status and headers (response-headers.ts) and its body, renamed
 * when the client asked for an inflection. One attempt: retrying a request the upstream
 * may have acted on is not the gateway's call. Down → 502 `upstream_unavailable`; no
 * answer within its `responseMs` of the call, queue included → 504 `upstream_timeout`;
 * both through `refuse`, as is a body that cannot be inflected while nothing was sent.
 */
export function createProxyStage (options: ProxyStageOptions) {
  return function forward (exchange: Forward, refuse: (problem: unknown) => void): void {
    const { routed, request } = exchange
    const upstream = routed.route.upstream
    // Everything from here is written on the raw response, not through Fastify's send.
    exchange.reply.hijack()
    const span = exchange.trace == null ? null : exchange.trace.upstreamCall(upstream, request.method)
    const headers = options.forwardHeaders(request, {
      keepsAuthorization: routed.route.auth === 'none',
      keepsApiKey: upstream.name === IDENTITY_UPSTREAM_NAME,
      inflected: routed.style !== null,
      principal: exchange.principal,
      host: routed.host,
      trace: span?.headers
    })
    // Past its share of the upstream's connections, the request is refused now rather than queued behind its own.
    let release: (() => void) | null
    try {
      release = options.fairShare.take(upstream, partitionOf('key', { route: routed.route, principal: exchange.principal, ip: request.ip }))
    } catch (err) {
      span?.end()
      refuse(err)
      return
    }
    const call = new UpstreamCall(exchange, options, refuse, release, span)
    try {
      options.dispatcher.dispatch({
        origin: upstream.origin,
        path: routed.upstreamPath + routed.search,
        method: request.method as Dispatcher.HttpMethod,
        headers,
        body: exchange.body,
        headersTimeout: upstream.timeouts.responseMs,
        bodyTimeout: upstream.timeouts.responseMs
      }, call)
    } catch (err) {
      call.fail(err instanceof Error ? err : new Error(String(err)))
    }
  }
}

export type ProxyStage = ReturnType<typeof createProxyStage>
