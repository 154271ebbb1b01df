import type { FastifyReply, FastifyRequest } from 'fastify'
import { AuthProblems, CommonProblems } from '../common/problem.js'
import { permissionDenied, permits, type Authenticate, type Principal } from './auth/authenticate.js'
import { GatewayProblems } from './errors.js'
import { ALLOWED_INFLECTION_VALUES, parseInflectionHeader, type KeyCase } from './inflection/index.js'
import { normalisePath, type ResolvedRoute, type RouteTable } from './routing/index.js'

/** What the gate decided about a request, read by the proxy handler and the hooks after it. */
export interface GateDecision {
  route: ResolvedRoute
  /** Exactly the path that was authorised, as the upstream will receive it (query apart). */
  upstreamPath: string
  search: string
  /** null on identity's public routes, which identity authenticates itself. */
  principal: Principal | null
  inflection: KeyCase | null
}

/**
 * Upstreams may honour these to turn an allowed POST into a forbidden DELETE; the
 * gateway authorises the real method only, so it refuses them rather than forward.
 */
const METHOD_OVERRIDE_HEADERS = ['x-http-method-override', 'x-http-method', 'x-method-override'] as const

function refuseMethodOverride (request: FastifyRequest, search: string): void {
  for (const header of METHOD_OVERRIDE_HEADERS) {
    if (request.headers[header] !== undefined) throw GatewayProblems.methodOverrideRefused([header])
  }
  // Parse the query only when it could name _method (literally or percent-encoded): most requests skip it.
  if (search.length > 1 && /_method|%/i.test(search) && new URLSearchParams(search).has('_method')) throw GatewayProblems.methodOverrideRefused(['_method query parameter'])
}

/**
 * Node keeps only the first of repeated Authorization headers, so which one counted
 * would depend on the order: like two x-api-key headers, two are one malformed credential.
 */
function refuseRepeatedAuthorization (request: FastifyRequest): void {
  if (request.headers.authorization === undefined) return
  const raw = request.raw.rawHeaders
  let seen = 0
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i] as string
    if (name.length === 13 && name.toLowerCase() === 'authorization' && ++seen > 1) {
      throw AuthProblems.invalidToken(['The Authorization header is not a well-formed Bearer credential.'])
    }
  }
}

/**
 * The gateway's checks, in DESIGN order, before any body is read: normalise the path
 * (path tricks are refused, never reinterpreted), match the route (404/405), read the
 * inflection header (400), authenticate (400/401/503) and authorise (403).
 */
export function createRequestGate (deps: { table: () => RouteTable, authenticate: Authenticate }) {
  return async function gate (request: FastifyRequest, reply: FastifyReply): Promise<GateDecision> {
    const normalised = normalisePath(request.url)
    if (!normalised.ok) throw GatewayProblems.malformedPath([normalised.reason])
    refuseMethodOverride(request, normalised.search)
    const match = deps.table().match(request.method, normalised.path)
    if (match.kind === 'not_found') throw CommonProblems.notFound([request.method, normalised.path])
    if (match.kind === 'method_not_allowed') {
      throw GatewayProblems.methodNotAllowed([request.method], { headers: { allow: match.allow.join(', ') } })
    }
    const inflection = parseInflectionHeader(request.headers['x-api-inflection'])
    if (inflection.kind === 'invalid') {
      throw GatewayProblems.invalidInflection([ALLOWED_INFLECTION_VALUES.join(', ')], { extensions: { allowed_values: ALLOWED_INFLECTION_VALUES } })
    }
    const decision: GateDecision = {
      route: match.route,
      upstreamPath: match.upstreamPath,
      search: normalised.search,
      principal: null,
      inflection: inflection.kind === 'style' ? inflection.style : null
    }
    refuseRepeatedAuthorization(request)
    if (match.route.auth === 'none') return decision
    const principal = await deps.authenticate(request.headers)
    decision.principal = principal
    if (principal.deprecation !== null) {
      // RFC 9745 (Deprecation, a structured-field date) and RFC 8594 (Sunset, an HTTP-date).
      reply.header('deprecation', `@${Math.floor(principal.deprecation.deprecatedAt / 1000)}`)
      reply.header('sunset', new Date(principal.deprecation.sunsetAt).toUTCString())
    }
    const permission = match.route.permission
    if (permission === null) throw GatewayProblems.permissionNotDeclared([match.route.method, match.route.pattern])
    if (!permits(principal.permissions, permission)) throw permissionDenied(principal, permission)
    return decision
  }
}

export type RequestGate = ReturnType<typeof createRequestGate>
