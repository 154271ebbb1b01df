import type { FastifyReply, FastifyRequest } from 'fastify'
import { bytesSentOn, declaredBodyBytes, responseBodyBytes } from '../common/bytes-sent.js'
import { ANONYMOUS_PRINCIPAL, pathOf, roundedMs, type AccessLine } from '../common/logger.js'
import { traceIdOf } from '../common/traceparent.js'
import { CommonProblems } from '../common/problem.js'
import { bodyPending } from '../common/unread-body.js'
import type { Authenticate, Principal } from './auth/authenticate.js'
import type { PreflightStage } from './cors/preflight.js'
import { authorise } from './auth/authorise.js'
import { GatewayProblems } from './errors.js'
import { parseInflectionHeader } from './inflection/index.js'
import type { RequestCounter } from './observability/request-counter.js'
import type { RequestTracing } from './observability/request-tracing.js'
import { admitTraced, authenticateTraced } from './observability/traced-stages.js'
import type { ProxyStage } from './proxy/forward.js'
import type { RequestBodyStage } from './proxy/request-body.js'
import type { RefusalContext, Refusals } from './refusals.js'
import type { ResolvedRoute } from './routing/index.js'
import type { RouteStage } from './routing/route-request.js'
import type { Admission, TrafficControl } from './traffic/traffic-control.js'
import { refusalOutcome } from './usage/refusal-outcome.js'
import type { UsageCounter } from './usage/usage-counter.js'
import { isUpgrade, type WebSocketStage } from './websocket/websocket-proxy.js'

/** Every stage of the path, and what it reports to. */
export interface RequestPathStages {
  route: RouteStage
  authenticate: Authenticate
  traffic: Pick<TrafficControl, 'admit'>
  usage: Pick<UsageCounter, 'record' | 'count'>
  body: RequestBodyStage
  proxy: ProxyStage
  websocket: WebSocketStage
  refusals: Refusals
  requests: RequestCounter
  accessLog: (line: AccessLine) => void
  /** One request's spans; null when tracing is off, and then nothing of it is made. */
  tracing?: RequestTracing
  /** Whether the gateway is draining (new requests get a 503, every answer closes its connection). */
  closing: () => boolean
  /** CORS preflights the gateway answers itself; absent: an OPTIONS request is routed like any other. */
  preflight?: PreflightStage
}

const NO_FIELDS: readonly string[] = Object.freeze([])

/** Name, value pairs of `extra` after those of `fields`, without a copy when there are none. */
const withFields = (fields: readonly string[], extra: readonly string[]): readonly string[] => extra.length === 0 ? fields : [...fields, ...extra]

/**
 * Runs `produce`, then `next` with what it gave: at once when it gave a value, once it
 * settles when it gave a promise. Whatever either throws (or the promise rejects with)
 * goes to `fail`. So a stage that can answer at once (a credential verified before, a
 * count kept in process) costs no promise and no turn of the microtask queue.
 */
function then<T> (produce: () => T | Promise<T>, next: (value: T) => void, fail: (error: unknown) => void): void {
  let value: T | Promise<T>
  try {
    value = produce()
  } catch (err) {
    fail(err)
    return
  }
  const proceed = (settled: T): void => {
    try {
      next(settled)
    } catch (err) {
      fail(err)
    }
  }
  if (value instanceof Promise) value.then(proceed, fail)
  else proceed(value)
}

/**
 * The gateway's request path, one stage after another, each taking what the one before
 * returned and returning a value (or a promise of one, when it must wait):
 *
 *   route → credential → permission → traffic → body → proxy (→ inflection of the answer)
 *
 * 1. route (routing/route-request.ts): query, Accept, Host, path, method overrides, the
 *    route and the inflection header; a refusal before the route matched is counted as
 *    unmatched, after it under its route.
 * 2. credential (auth/authenticate.ts): the principal, from the key or token presented;
 *    identity's own routes take none here (identity checks its own).
 * 3. permission (auth/authorise.ts): the route's permission against the principal's.
 * 4. traffic (traffic/traffic-control.ts): concurrency caps, rate limits and quotas;
 *    what the answer carries (RateLimit fields) and what gives the slots back. A key let
 *    through is counted as a use of its secret; a verified key refused for a permission,
 *    a limit or a quota before that, and one let through and answered 5xx, are counted
 *    too, by outcome (usage/usage-counter.ts).
 * 5. body (proxy/request-body.ts): read only now, within its limits, in the upstream's
 *    spelling.
 * 6. proxy (proxy/forward.ts, or websocket/websocket-proxy.ts for a WebSocket route): the
 *    principal's fair share of the upstream's connections (traffic/fair-share.ts), taken
 *    when the request is dispatched, then the upstream's answer, renamed to the
 *    client's inflection when asked.
 *
 * A CORS preflight of a route whose upstream has a cors block (cors/preflight.ts) is
 * routed by the method it asks about and answered by the gateway once the anonymous
 * policies let it through, without a credential; an allowed origin's other requests
 * get the block's fields on every answer, refusals included.
 *
 * Every answer is written here, on the raw response: a refusal at any stage
 * (refusals.ts), or the upstream's. When it is over (sent, or the client gone) the
 * slots are given back, and it is counted and logged: one access line saying who asked
 * for what, where it went and how it ended.
 *
 * With tracing on (observability/request-tracing.ts), the request is a SERVER span
 * (joining the caller's trace when it sent a traceparent), the credential and traffic
 * stages its children, the upstream call a CLIENT span; the access line names the
 * span's trace. With tracing off nothing of it is made: `span` stays null.
 */
export function createRequestPath (stages: RequestPathStages) {
  const tracing = stages.tracing ?? null
  /**
   * Serves one request. `handOver` is given when the request is an upgrade that reached
   * the WebSocket proxy's route: once checked, a WebSocket route's upgrade is handed over.
   */
  return function serve (request: FastifyRequest, reply: FastifyReply, handOver?: () => void): void {
    const response = reply.raw
    const startedAt = performance.now()
    const span = tracing === null ? null : tracing(request)
    const inflection = parseInflectionHeader(request.headers['x-api-inflection'])
    // What the path has learned so far: what a refusal says, and what the access line records.
    let route: ResolvedRoute | null = null
    let principal: Principal | null = null
    let admission: Admission | null = null
    // The secret of a verified key, once known: its outcomes are counted whether or not it is authorised.
    let keyLookupId: string | null = null
    // Who the access line names: the verified credential's principal, authorised or not.
    let caller: Principal | null = null
    // Content-Length when declared; a chunked body is counted once read.
    let bytesIn = declaredBodyBytes(request.headers)
    const sentBefore = bytesSentOn(request.raw.socket)
    // The CORS fields every answer to an allowed origin carries, refusals included, once the route is known.
    let corsFields = NO_FIELDS
    const refusal = (): RefusalContext => ({
      style: inflection.kind === 'style' ? inflection.style : null,
      fields: withFields(admission === null ? principal?.answerHeaders ?? [] : [...principal?.answerHeaders ?? [], ...admission.fields], corsFields),
      checked: admission !== null,
      closing: stages.closing()
    })
    const refuse = (error: unknown): void => {
      if (keyLookupId !== null && admission === null) {
        const outcome = refusalOutcome(error)
        if (outcome !== undefined) stages.usage.count(keyLookupId, outcome)
      }
      stages.refusals(request, reply, error, refusal())
    }
    // Set when the response closed (sent, or the client gone): a stage that was waiting then must not go on.
    let over = false

    response.once('close', () => {
      over = true
      admission?.release?.()
      // Let through and answered 5xx: the upstream's answer, or the gateway's 502/504 when it failed.
      if (admission !== null && keyLookupId !== null && response.statusCode >= 500) stages.usage.count(keyLookupId, 'upstream_error')
      const elapsedMs = performance.now() - startedAt
      stages.requests.count(route, request.method, response.statusCode, elapsedMs / 1000)
      span?.end(response.statusCode, route, caller)
      stages.accessLog({
        request_id: request.id,
        trace_id: span === null ? traceIdOf(request.headers.traceparent) : span.traceId,
        method: request.method,
        url: pathOf(request.url),
        route: route === null ? null : route.pattern,
        upstream: route === null ? null : route.upstream.name,
        status: response.statusCode,
        principal: caller === null ? ANONYMOUS_PRINCIPAL : caller.accessPrincipal,
        bytes_in: bytesIn,
        bytes_out: responseBodyBytes(response, sentBefore),
        duration_ms: roundedMs(elapsedMs),
        remote_address: request.ip
      })
    })

    if (stages.closing()) {
      refuse(CommonProblems.serviceUnavailable())
      return
    }
    if (request.method === 'OPTIONS' && stages.preflight !== undefined) {
      const preflight = stages.preflight.requested(request)
      // Routed by the method it asks about; a preflight of a route without a cors block is an OPTIONS request like any other.
      const asked = preflight === null ? null : stages.route(request, inflection, preflight.method)
      const cors = asked?.kind === 'routed' ? asked.route.cors : undefined
      if (preflight !== null && asked !== null && cors !== undefined) {
        const answerPreflight = stages.preflight.answer
        route = asked.route
        // No credential comes with a preflight: only the anonymous policies count it.
        then(() => admitTraced(stages.traffic, span, { route: cors.preflightRoute, principal: null, ip: request.ip }), (admitted) => {
          if (over) {
            admitted.release?.()
            return
          }
          admission = admitted
          answerPreflight(request, reply, cors, preflight, admitted.fields, stages.closing())
        }, refuse)
        return
      }
    }
    const routed = stages.route(request, inflection)
    route = routed.route
    // Without a cors block the route has no such member: nothing more is looked at.
    if (routed.route?.cors !== undefined) {
      const origin = request.headers.origin
      if (origin !== undefined) corsFields = routed.route.cors.answerFields(origin)
    }
    if (routed.kind === 'refused') {
      refuse(routed.refused)
      return
    }
    // A WebSocket route takes upgrades only; any other route answers an upgrade (without a body) as an ordinary request.
    const upgrade = isUpgrade(request.raw)
    if (routed.route.websocket ? !upgrade : upgrade && bodyPending(request.raw)) {
      refuse(upgrade
        ? GatewayProblems.notWebSocketRoute([routed.route.method, routed.route.pattern])
        : GatewayProblems.webSocketUpgradeRequired([routed.route.method, routed.route.pattern]))
      return
    }

    then(() => routed.route.auth === 'none' ? null : authenticateTraced(stages.authenticate, span, request.headers), (authenticated) => {
      keyLookupId = authenticated?.secretLookupId ?? null
      caller = authenticated
      principal = authenticated === null ? null : authorise(routed.route, authenticated)
      if (over) return
      then(() => admitTraced(stages.traffic, span, { route: routed.route, principal, ip: request.ip }), (admitted) => {
        // The client left while the counts were read: what was taken for it is given back, nothing is counted as a use.
        if (over) {
          admitted.release?.()
          return
        }
        admission = admitted
        if (keyLookupId !== null) stages.usage.record(keyLookupId, routed.route.pattern, request.ip)
        const answerFields = withFields(principal === null || principal.answerHeaders.length === 0
          ? admitted.fields
          : [...principal.answerHeaders, ...admitted.fields], corsFields)
        if (routed.route.websocket) {
          if (handOver === undefined) throw GatewayProblems.notWebSocketRoute([routed.route.method, routed.route.pattern])
          stages.websocket({ request, reply, routed, principal, answerFields }, handOver)
          return
        }
        then(() => stages.body(routed, request.raw, response), (body) => {
          // Chunked, without a Content-Length: the body's length as forwarded (an inflection's renaming may change it).
          if (body !== null && request.headers['content-length'] === undefined) bytesIn = body.length
          // Nothing is sent upstream for a client that is gone (nor a place of its fair share taken that no close would give back).
          if (over) return
          stages.proxy({
            request,
            reply,
            routed,
            principal,
            answerFields,
            rateLimited: admitted.fields.length > 0,
            body,
            closing: stages.closing(),
            trace: span
          }, refuse)
        }, refuse)
      }, refuse)
    }, refuse)
  }
}

export type RequestPath = ReturnType<typeof createRequestPath>
