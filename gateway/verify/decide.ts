import type { IncomingHttpHeaders } from 'node:http'
import { queryStringProblem, searchOf } from '../../common/query-string.js'
import { CommonProblems } from '../../common/problem.js'
import type { Authenticate, Principal } from '../auth/authenticate.js'
import { authorise } from '../auth/authorise.js'
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
  | { readonly allowed: true, readonly route: ResolvedRoute, readonly principal: Principal | null, readonly fields: readonly string[] }
  /** `principal`: the credential's, when it was verified (a key lacking a permission is still named). */
  | { readonly allowed: false, readonly route: ResolvedRoute | null, readonly principal: Principal | null, readonly problem: unknown }

export interface DecisionStages {
  table: () => RouteTable
  authenticate: Authenticate
  traffic: Pick<TrafficControl, 'admit'>
  usage: Pick<UsageCounter, 'record' | 'count'>
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
  return async function decide (question: VerifyQuestion): Promise<Verdict> {
    let route: ResolvedRoute | null = null
    let authenticated: Principal | null = null
    try {
      const queryProblem = queryStringProblem(searchOf(question.url))
      if (queryProblem !== null) throw CommonProblems.malformedQuery([queryProblem])
      route = matchRoute(stages.table(), question.method, question.url, question.headers).route
      authenticated = route.auth === 'none' ? null : await stages.authenticate(question.headers)
      const principal = authenticated === null ? null : authorise(route, authenticated)
      const admission = await stages.traffic.admit({ route, principal, ip: question.ip })
      admission.release?.()
      if (principal?.secretLookupId != null) stages.usage.record(principal.secretLookupId, route.pattern, question.ip)
      const fields = principal === null || principal.answerHeaders.length === 0 ? admission.fields : [...principal.answerHeaders, ...admission.fields]
      return { allowed: true, route, principal, fields }
    } catch (problem) {
      const lookupId = authenticated?.secretLookupId ?? null
      if (lookupId !== null) {
        const outcome = refusalOutcome(problem)
        if (outcome !== undefined) stages.usage.count(lookupId, outcome)
      }
      return { allowed: false, route, principal: authenticated, problem }
    }
  }
}

export type VerifyDecision = ReturnType<typeof createVerifyDecision>
