import type { FastifyReply, FastifyRequest } from 'fastify'
import { permits } from '../common/permissions.js'
import { AuthDetails, AuthProblems, CommonProblems } from '../common/problem.js'
import { permissionDenied, type Authenticate, type Principal } from './auth/authenticate.js'
import { GatewayDetails, GatewayProblems } from './errors.js'
import { hostProblem } from './host-header.js'
import { ALLOWED_INFLECTION_VALUES, parseInflectionHeader, type KeyCase } from './inflection/index.js'
import { METHOD_OVERRIDE_HEADERS, queryOverridesMethod } from './method-override.js'
import { normalisePath, type ResolvedRoute, type RouteTable } from './routing/index.js'
import type { TrafficControl } from './traffic/traffic-control.js'
import type { UsageCounter } from './usage/usage-counter.js'

/** What the gate decided about a request, read by the proxy handler and the hooks after it. */
export interface GateDecision {
  route: ResolvedRoute
  /** Exactly the path that was authorised, as the upstream will receive it (query apart). */
  upstreamPath: string
  search: string
  /** null on identity's public routes, which identity authenticates itself. */
  principal: Principal | null
  inflection: KeyCase | null
  /** When the request was handed to the upstream (performance.now()); 0 until then. */
  sentAt: number
  /** The gateway answers with RateLimit fields of its own (a rate limit or quota covers the request). */
  rateLimitFields: boolean
}

function refuseMethodOverride (request: FastifyRequest, search: string): void {
  for (const header of METHOD_OVERRIDE_HEADERS) {
    if (request.headers[header] !== undefined) throw GatewayProblems.methodOverrideRefused([GatewayDetails.overrideHeader(header)])
  }
  if (queryOverridesMethod(search)) throw GatewayProblems.methodOverrideRefused([GatewayDetails.overrideQuery])
}

/**
 * Node keeps only the first of repeated Host and Authorization headers, so which one
 * counted would depend on the order. Two Hosts are two claims about which site is
 * asked (and the first would become X-Forwarded-Host); like two x-api-key headers,
 * two Authorization headers are one malformed credential.
 */
function countRepeatable (request: FastifyRequest): { hosts: number, authorizations: number } {
  const raw = request.raw.rawHeaders
  let hosts = 0
  let authorizations = 0
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i] as string
    if (name.length === 4 && name.toLowerCase() === 'host') hosts++
    else if (name.length === 13 && name.toLowerCase() === 'authorization') authorizations++
  }
  return { hosts, authorizations }
}

/**
 * The Host the gateway vouches for (it becomes X-Forwarded-Host): the client's, or the
 * one a trusted proxy forwarded (Fastify's `request.host` under `trustProxy`). Both
 * must be one well-formed host[:port].
 */
function refuseBadHost (request: FastifyRequest, hosts: number): void {
  if (hosts > 1) throw GatewayProblems.malformedHost([GatewayDetails.repeatedHost])
  const sent = request.headers.host
  const problem = (sent === undefined ? null : hostProblem(sent)) ?? hostProblem(request.host)
  if (problem !== null) throw GatewayProblems.malformedHost([problem])
}

/**
 * The gateway's checks, cheapest first, before any body is read: one well-formed Host
 * (400), normalise the path and check the query (path tricks are refused, never
 * reinterpreted; so are method overrides), match the route (404/405), read the
 * inflection header (400), authenticate (400/401/503) and authorise (403). Refusals
 * are thrown. The decision comes at once when the credential was verified before (a
 * cached key or token): only a credential identity or the signing keys must vouch for
 * makes it a promise. The matched route is noted on the request as soon as it is
 * known, so that a refusal after it is counted under its route. A key let through is
 * counted as a use of the secret presented.
 */
export function createRequestGate (deps: {
  table: () => RouteTable
  authenticate: Authenticate
  usage: Pick<UsageCounter, 'record'>
  traffic: Pick<TrafficControl, 'admit'>
}) {
  /** The decision once traffic control lets the request through (a promise when Redis is asked); its refusals are thrown. */
  function admitted (request: FastifyRequest, reply: FastifyReply, decision: GateDecision): GateDecision | Promise<GateDecision> {
    const admission = deps.traffic.admit(reply, { route: decision.route, principal: decision.principal, ip: request.ip })
    const principal = decision.principal
    const counted = (): GateDecision => {
      decision.rateLimitFields = reply.hasHeader('ratelimit')
      if (principal?.secretLookupId != null) deps.usage.record(principal.secretLookupId, decision.route.pattern, request.ip)
      return decision
    }
    return admission instanceof Promise ? admission.then(counted) : counted()
  }

  function authorised (request: FastifyRequest, decision: GateDecision, principal: Principal, reply: FastifyReply): GateDecision | Promise<GateDecision> {
    decision.principal = principal
    if (principal.deprecation !== null) {
      // RFC 9745 (Deprecation, a structured-field date) and RFC 8594 (Sunset, an HTTP-date).
      reply.header('deprecation', `@${Math.floor(principal.deprecation.deprecatedAt / 1000)}`)
      reply.header('sunset', new Date(principal.deprecation.sunsetAt).toUTCString())
    }
    const route = decision.route
    if (route.permission === null) throw GatewayProblems.permissionNotDeclared([route.method, route.pattern])
    if (!permits(principal.permissions, route.permission)) throw permissionDenied(principal, route.permission)
    return admitted(request, reply, decision)
  }

  return function gate (request: FastifyRequest, reply: FastifyReply): GateDecision | Promise<GateDecision> {
    const repeated = countRepeatable(request)
    refuseBadHost(request, repeated.hosts)
    const normalised = normalisePath(request.url)
    if (!normalised.ok) {
      throw normalised.part === 'query' ? CommonProblems.malformedQuery([normalised.reason]) : GatewayProblems.malformedPath([normalised.reason])
    }
    refuseMethodOverride(request, normalised.search)
    const match = deps.table().match(request.method, normalised.path)
    if (match.kind === 'not_found') throw CommonProblems.notFound([request.method, normalised.path])
    if (match.kind === 'method_not_allowed') {
      throw GatewayProblems.methodNotAllowed([request.method], { headers: { allow: match.allow.join(', ') } })
    }
    request.portierRoute = match.route
    const inflection = parseInflectionHeader(request.headers['x-api-inflection'])
    if (inflection.kind === 'invalid') {
      throw GatewayProblems.invalidInflection([ALLOWED_INFLECTION_VALUES.join(', ')], { extensions: { allowed_values: ALLOWED_INFLECTION_VALUES } })
    }
    const decision: GateDecision = {
      route: match.route,
      upstreamPath: match.upstreamPath,
      search: normalised.search,
      principal: null,
      inflection: inflection.kind === 'style' ? inflection.style : null,
      sentAt: 0,
      rateLimitFields: false
    }
    if (repeated.authorizations > 1) throw AuthProblems.invalidToken([AuthDetails.malformedBearer])
    if (match.route.auth === 'none') return admitted(request, reply, decision)
    const principal = deps.authenticate(request.headers)
    return principal instanceof Promise
      ? principal.then((verified) => authorised(request, decision, verified, reply))
      : authorised(request, decision, principal, reply)
  }
}

export type RequestGate = ReturnType<typeof createRequestGate>
