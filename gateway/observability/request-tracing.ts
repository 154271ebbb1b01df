import { SpanKind, SpanStatusCode, trace, type Context, type Span } from '@opentelemetry/api'
import type { FastifyRequest } from 'fastify'
import { pathOf } from '../../common/logger.js'
import { isPortierProblem } from '../../common/problem.js'
import type { TraceParent, Tracing } from '../../common/tracing/tracing.js'
import type { Principal } from '../auth/authenticate.js'
import type { ResolvedRoute, ResolvedUpstream } from '../routing/index.js'

/** The gateway's span names: one SERVER span per request (or verify question), its stages, and one CLIENT span per upstream call. */
export const GATEWAY_SPANS = {
  request: 'portier.request',
  verify: 'portier.verify',
  authenticate: 'portier.authenticate',
  traffic: 'portier.traffic_control',
  upstream: 'portier.upstream'
} as const

function headerObject (pairs: readonly string[]): Record<string, string> {
  const headers: Record<string, string> = {}
  for (let i = 0; i < pairs.length; i += 2) headers[pairs[i] as string] = pairs[i + 1] as string
  return headers
}

/** What a stage's span records when the stage refused: its problem's code; an error status only when the answer is a 5xx. */
function recordRefusal (span: Span, error: unknown): void {
  const status = isPortierProblem(error) ? error.statusCode ?? 500 : 500
  span.setAttribute('error.type', isPortierProblem(error) ? error.code : 'internal')
  if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR })
}

/** host[:port] of each upstream's origin, read once rather than parsed per call. */
const serverAddresses = new WeakMap<ResolvedUpstream, string>()

function serverAddressOf (upstream: ResolvedUpstream): string {
  let address = serverAddresses.get(upstream)
  if (address === undefined) serverAddresses.set(upstream, address = new URL(upstream.origin).host)
  return address
}

/**
 * One request's spans. Made only when tracing is on (the request path holds null
 * otherwise, and makes nothing). Attributes name what the access line names, never
 * more: no credential, no header value, no query string.
 *
 * An unsampled request makes no child span: with every sampler OTEL_TRACES_SAMPLER
 * names, a child's decision is its parent's (the parent-based ones follow it, the
 * ratio ones decide on the same trace id), so they would all be dropped. Identity and
 * the upstream are told the request span's own context, unsampled, so that they do
 * not start a trace of their own.
 */
export class RequestSpan {
  readonly #tracing: Tracing
  readonly #span: Span
  /** The request span's context, its children's parent: made only when it records (an unsampled request has no children). */
  readonly #context: Context | undefined
  readonly #recording: boolean
  /** The request span as the parent of a call, for an unsampled request's stages. */
  #asParent: TraceParent | null = null

  /** `name`: the request's own span, or a verify question's (a request described by a proxy, not sent). */
  constructor (tracing: Tracing, request: TracedRequest, name: string = GATEWAY_SPANS.request) {
    this.#tracing = tracing
    const parent = tracing.extract(request.headers)
    const span = this.#span = tracing.tracer.startSpan(name, { kind: SpanKind.SERVER }, parent)
    this.#recording = span.isRecording()
    if (this.#recording) {
      span.setAttribute('http.request.method', request.method)
      span.setAttribute('url.path', pathOf(request.url))
      this.#context = trace.setSpan(parent, span)
    }
  }

  /** The trace the request belongs to: the caller's, or a new one. */
  get traceId (): string {
    return this.#span.spanContext().traceId
  }

  /**
   * Runs a stage (authentication, traffic control) under a span of its own. A stage
   * that answered at once (a credential or count this process held) is marked a
   * cache hit, one that had to wait a miss; the span ends once its value is known.
   */
  stage<T> (name: string, produce: (parent: TraceParent) => T | Promise<T>): T | Promise<T> {
    if (!this.#recording) return produce(this.#asParent ??= { headers: () => headerObject(this.#tracing.headersOf(this.#span)) })
    const span = this.#tracing.tracer.startSpan(name, { kind: SpanKind.INTERNAL }, this.#context)
    const fail = (err: unknown): never => {
      recordRefusal(span, err)
      span.end()
      throw err
    }
    let value: T | Promise<T>
    try {
      value = produce({ headers: () => headerObject(this.#tracing.headersOf(span)) })
    } catch (err) {
      return fail(err)
    }
    if (value instanceof Promise) {
      span.setAttribute('portier.cache', 'miss')
      return value.then((settled) => {
        span.end()
        return settled
      }, fail)
    }
    span.setAttribute('portier.cache', 'hit')
    span.end()
    return value
  }

  /** The CLIENT span of one call to `upstream`, and the trace headers that make it the upstream's parent. */
  upstreamCall (upstream: ResolvedUpstream, method: string): UpstreamSpan {
    if (!this.#recording) return new UpstreamSpan(null, this.#tracing.headersOf(this.#span))
    const span = this.#tracing.tracer.startSpan(GATEWAY_SPANS.upstream, {
      kind: SpanKind.CLIENT,
      attributes: { 'http.request.method': method, 'portier.upstream': upstream.name, 'server.address': serverAddressOf(upstream) }
    }, this.#context)
    return new UpstreamSpan(span, this.#tracing.headersOf(span))
  }

  /** The request is over: what it matched, who asked, how it ended. */
  end (status: number, route: ResolvedRoute | null, caller: Principal | null): void {
    const span = this.#span
    if (!this.#recording) return
    span.setAttribute('http.response.status_code', status)
    if (route !== null) {
      span.setAttribute('http.route', route.pattern)
      span.setAttribute('portier.upstream', route.upstream.name)
    }
    // The key's id or the user's id: never the credential itself.
    span.setAttribute('portier.principal.type', caller === null ? 'anonymous' : caller.accessPrincipal.type)
    if (caller !== null) span.setAttribute('portier.principal.id', caller.id)
    if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR })
    span.end()
  }
}

/** One upstream call's CLIENT span. */
export class UpstreamSpan {
  #span: Span | null
  /** traceparent and tracestate for the upstream, as name, value pairs: they replace the client's. */
  readonly headers: readonly string[]

  /** `span`: null for an unsampled request, whose call only carries its context. */
  constructor (span: Span | null, headers: readonly string[]) {
    this.#span = span
    this.headers = headers
  }

  answered (status: number): void {
    this.#span?.setAttribute('http.response.status_code', status)
    if (status >= 500) this.#span?.setStatus({ code: SpanStatusCode.ERROR })
  }

  /** The call is over; `error` when it failed (no answer, or one cut). */
  end (error?: Error): void {
    const span = this.#span
    if (span === null) return
    this.#span = null
    if (error !== undefined) {
      span.setAttribute('error.type', error.name)
      span.setStatus({ code: SpanStatusCode.ERROR })
    }
    span.end()
  }
}

/** What a request span is made from: a request, or a verify question describing one. */
export type TracedRequest = Pick<FastifyRequest, 'method' | 'url' | 'headers'>

/** Whether requests are traced, and how: null when tracing is off, so that the path's one check is `=== null`. */
export type RequestTracing = ((request: TracedRequest, name?: string) => RequestSpan) | null

export function createRequestTracing (tracing: Tracing | null): RequestTracing {
  if (tracing === null) return null
  return (request, name) => new RequestSpan(tracing, request, name)
}
