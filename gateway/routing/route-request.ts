import type { IncomingHttpHeaders } from 'node:http'
import type { FastifyRequest } from 'fastify'
import { acceptsJson } from '../../common/accept.js'
import { AuthDetails, AuthProblems, CommonProblems } from '../../common/problem.js'
import { queryStringProblem, searchOf } from '../../common/query-string.js'
import { GatewayDetails, GatewayProblems } from '../errors.js'
import { hostProblem } from '../host-header.js'
import { ALLOWED_INFLECTION_VALUES, type InflectionRequest, type KeyCase } from '../inflection/index.js'
import { refuseHeaderOrQueryOverride } from '../method-override.js'
import { normalisePath } from './normalise-path.js'
import { CONSOLE_PREFIX, isAtOrUnder } from './paths.js'
import type { ResolvedRoute, RouteTable } from './types.js'

/** What the route stage found: the route, and exactly what its upstream will be asked for. */
export interface RoutedRequest {
  readonly kind: 'routed'
  readonly route: ResolvedRoute
  /** Exactly the path that is authorised, as the upstream will receive it. */
  readonly upstreamPath: string
  /** The query as the client sent it, with its `?` (empty when none): checked, never re-encoded. */
  readonly search: string
  /** The client's x-api-inflection, or null for none. */
  readonly style: KeyCase | null
  /** What the upstream gets as X-Forwarded-Host: the Host the gateway vouches for, '' for none. */
  readonly host: string
}

/**
 * Node keeps only the first of repeated Host and Authorization headers, so which one
 * counted would depend on the order. Two Hosts are two claims about which site is
 * asked (and the first would become X-Forwarded-Host); like two x-api-key headers,
 * two Authorization headers are one malformed credential.
 */
function countRepeatable (rawHeaders: readonly string[]): { hosts: number, authorizations: number } {
  let hosts = 0
  let authorizations = 0
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]
    if (name === undefined) break
    if (name.length === 4 && name.toLowerCase() === 'host') hosts++
    else if (name.length === 13 && name.toLowerCase() === 'authorization') authorizations++
  }
  return { hosts, authorizations }
}

/** A request the route stage refused, with its route when it matched one (a refusal is counted under it). */
export interface RouteRefusal {
  readonly kind: 'refused'
  /** What was thrown: a problem, or an error answered as a 500. */
  readonly refused: unknown
  readonly route: ResolvedRoute | null
}

export interface RouteStageOptions {
  table: () => RouteTable
  /** GATEWAY_PUBLIC_HOSTS, lower-cased: the only hosts served; null serves any well-formed one. */
  publicHosts: ReadonlySet<string> | null
}

/**
 * The route of `method` and `url` (path and query, as sent): the path normalised or
 * refused (400), method overrides in a header or the query refused (400), then the
 * table's route (404, 405), thrown as the problem to answer with. What the route stage
 * does once the request itself is checked, and what the verify API asks for a request
 * described to it, so both find the same route.
 */
export function matchRoute (table: RouteTable, method: string, url: string, headers: IncomingHttpHeaders): { route: ResolvedRoute, upstreamPath: string, search: string } {
  const normalised = normalisePath(url)
  if (!normalised.ok) {
    throw normalised.part === 'query' ? CommonProblems.malformedQuery([normalised.reason]) : GatewayProblems.malformedPath([normalised.reason])
  }
  refuseHeaderOrQueryOverride(headers, normalised.search)
  const found = table.match(method, normalised.path)
  if (found.kind === 'not_found') throw CommonProblems.notFound([method, normalised.path])
  if (found.kind === 'method_not_allowed') {
    throw GatewayProblems.methodNotAllowed([method], { headers: { allow: found.allow.join(', ') } })
  }
  return { route: found.route, upstreamPath: found.upstreamPath, search: normalised.search }
}

/**
 * The route stage, cheapest checks first, before anything is verified or read: the
 * query's syntax (400), an Accept that excludes JSON (406), one well-formed Host that
 * is one of the public hosts when those are set (400, 421), the path normalised or
 * refused (400: path tricks are refused, never reinterpreted), method overrides in a
 * header or the query (400), the route (404, 405), the inflection header (400) and two
 * Authorization headers (401). A refusal is the problem to answer with, and the route
 * when one matched.
 */
export function createRouteStage (options: RouteStageOptions) {
  const { publicHosts } = options

  /**
   * The Host the gateway vouches for: the client's, or the one a trusted proxy forwarded
   * (Fastify's `request.host` under `trustProxy`). Both must be one well-formed
   * host[:port], and the vouched one a public host when those are set.
   */
  function vouchedHost (request: FastifyRequest, hosts: number): string {
    if (hosts > 1) throw GatewayProblems.malformedHost([GatewayDetails.repeatedHost])
    const sent = request.headers.host
    const host = request.host
    const problem = (sent === undefined ? null : hostProblem(sent)) ?? hostProblem(host)
    if (problem !== null) throw GatewayProblems.malformedHost([problem])
    if (publicHosts !== null && !publicHosts.has(host.toLowerCase())) throw GatewayProblems.misdirectedRequest([host])
    return host
  }

  /**
   * The console's pages answer HTML to browsers, whatever their Accept says: when the
   * gateway serves the console, a request under its prefix is not held to JSON here
   * (the path is still normalised and matched below like any other).
   */
  function forConsole (url: string): boolean {
    const end = url.indexOf('?')
    return options.table().upstreams.some((upstream) => upstream.formBodies === true) && isAtOrUnder(end === -1 ? url : url.slice(0, end), CONSOLE_PREFIX)
  }

  /** Everything up to the route: thrown problems are refusals of a request that matched nothing. */
  function match (request: FastifyRequest, repeated: { hosts: number }, method: string): { route: ResolvedRoute, upstreamPath: string, search: string, host: string } {
    const queryProblem = queryStringProblem(searchOf(request.url))
    if (queryProblem !== null) throw CommonProblems.malformedQuery([queryProblem])
    if (!acceptsJson(request.headers.accept) && !forConsole(request.url)) throw CommonProblems.notAcceptable()
    const host = vouchedHost(request, repeated.hosts)
    return { ...matchRoute(options.table(), method, request.url, request.headers), host }
  }

  /** `method`: the one to route by, when not the request's own (a CORS preflight is routed by the method it asks about). */
  return function routeRequest (request: FastifyRequest, inflection: InflectionRequest, method: string = request.method): RoutedRequest | RouteRefusal {
    const repeated = countRepeatable(request.raw.rawHeaders)
    let matched
    try {
      matched = match(request, repeated, method)
    } catch (err) {
      return { kind: 'refused', refused: err, route: null }
    }
    if (inflection.kind === 'invalid') {
      const refused = GatewayProblems.invalidInflection([ALLOWED_INFLECTION_VALUES.join(', ')], { extensions: { allowed_values: ALLOWED_INFLECTION_VALUES } })
      return { kind: 'refused', refused, route: matched.route }
    }
    if (repeated.authorizations > 1) return { kind: 'refused', refused: AuthProblems.invalidToken([AuthDetails.malformedBearer]), route: matched.route }
    return { kind: 'routed', ...matched, style: inflection.kind === 'style' ? inflection.style : null }
  }
}

export type RouteStage = ReturnType<typeof createRouteStage>
