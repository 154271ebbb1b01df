import type { IncomingHttpHeaders } from 'node:http'
import { queryStringProblem, searchOf } from '../../common/query-string.js'
import { CommonProblems, isPortierProblem } from '../../common/problem.js'
import type { Authenticate, Principal } from '../auth/authenticate.js'
import { authorise } from '../auth/authorise.js'
import { GATEWAY_SPANS, type RequestSpan, type RequestTracing } from '../observability/request-tracing.js'
import { admitTraced, authenticateTraced } from '../observability/traced-stages.js'
import type { ResolvedRoute, RouteTable } from '../routing/index.js'
import { matchRoute } from '../routing/route-request.js'
import type { TrafficControl } from '../traffic/traffic-control.js'
import { refusalOutcome } from '../usage/refusal-outcome.js'
import type { UsageCounter } from '../usage/usage-counter.js'

/** A request described to the verify API: what a proxy in front is about to forward. */
export interface VerifyQuestion {
  method: string
  /** The path and query, as the client sent them. */
  url: string
  /** The credential (x-api-key or Authorization) and any method-override headers, as the client sent them. */
  headers: IncomingHttpHeaders
  /** The client's address: what per-IP limits count. */
  ip: string
}

/** What the gateway decided of a described request. */
export type Verdict =
  /** `trueForSeconds`: how long the allow stays true, whole seconds, before its credential expires (0: anonymous, or within the second). */
  | { readonly allowed: true, readonly route: ResolvedRoute, readonly principal: Principal | null, readonly fields: readonly string[], readonly trueForSeconds: number }
  /** `principal`: the credential's, when it was verified (a key lacking a permission is still named). */
  | { readonly allowed: false, readonly route: ResolvedRoute | null, readonly principal: Principal | null, readonly problem: unknown }

export interface DecisionStages {
  table: () => RouteTable
  authenticate: Authenticate
  traffic: Pick<TrafficControl, 'admit'>
  usage: Pick<UsageCounter, 'record' | 'count'>
  /** The gateway's clock (epoch ms), which credentials' expiries are read against. */
  now: () => number
  /** A question's spans when tracing is on: `portier.verify`, with the stages' spans as children. */
  tracing?: RequestTracing
}

/** The status the gateway would have answered the described request with: what the verify span records. */
function statusOf (verdict: Verdict): number {
  if (verdict.allowed) return 200
  return isPortierProblem(verdict.problem) ? verdict.problem.statusCode ?? 500 : 500
}

/**
 * The verify API's decision: the request path's own stages, in its order (route,
 * credential, permission, traffic), on a request described rather than sent, so a
 * proxy asking "may this pass?" gets what the gateway would have answered. It charges
 * what the path charges: rate limits and quotas are taken, a key's use (or its refusal
 * by outcome) is counted. Nothing is forwarded, so nothing is held: a concurrency slot
 * is given back at once, since the request it would cover is served elsewhere.
 */
export function createVerifyDecision (stages: DecisionStages) {
  const tracing = stages.tracing ?? null
  async function decide (question: VerifyQuestion): Promise<Verdict> {
    // The question carries the client's headers, its traceparent among them: the span joins the client's trace.
    const span = tracing === null ? null : tracing(question, GATEWAY_SPANS.verify)
    const verdict = await answer(question, span)
    span?.end(statusOf(verdict), verdict.route, verdict.principal)
    return verdict
  }
  async function answer (question: VerifyQuestion, span: RequestSpan | null): Promise<Verdict> {
    let route: ResolvedRoute | null = null
    let authenticated: Principal | null = null
    try {
      const queryProblem = queryStringProblem(searchOf(question.url))
      if (queryProblem !== null) throw CommonProblems.malformedQuery([queryProblem])
      route = matchRoute(stages.table(), question.method, question.url, question.headers).route
      authenticated = route.auth === 'none' ? null : await authenticateTraced(stages.authenticate, span, question.headers)
      const principal = authenticated === null ? null : authorise(route, authenticated)
      const admission = await admitTraced(stages.traffic, span, { route, principal, ip: question.ip })
      admission.release?.()
      if (principal?.secretLookupId != null) stages.usage.record(principal.secretLookupId, route.pattern, question.ip)
      const fields = principal === null || principal.answerHeaders.length === 0 ? admission.fields : [...principal.answerHeaders, ...admission.fields]
      const trueForSeconds = principal === null ? 0 : Math.max(0, Math.floor((principal.validUntil - stages.now()) / 1000))
      return { allowed: true, route, principal, fields, trueForSeconds }
    } catch (problem) {
      const lookupId = authenticated?.secretLookupId ?? null
      if (lookupId !== null) {
        const outcome = refusalOutcome(problem)
        if (outcome !== undefined) stages.usage.count(lookupId, outcome)
      }
      return { allowed: false, route, principal: authenticated, problem }
    }
  }
  return decide
}

export type VerifyDecision = ReturnType<typeof createVerifyDecision>
