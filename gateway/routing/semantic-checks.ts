import { policyListProblems, type TrafficPolicy } from '../../common/traffic/policy.js'
import {
  basePathOf, CONSOLE_UPSTREAM_NAME, gatewayOwnPrefixOf, IDENTITY_ROUTES, IDENTITY_UPSTREAM_NAME, isAtOrUnder, isGatewayOwnPath, joinPrefix, pathSegments,
  patternCanStartWith, patternKey, reservedPrefixOf, reservedReachOf, withBasePath
} from './paths.js'
import { corsProblems } from './cors-checks.js'
import type { UpstreamsFileContent } from './schema.js'

type Upstream = UpstreamsFileContent['upstreams'][number]

export interface SemanticFindings {
  problems: string[]
  /** Routes without a permission: they load, and every request to them is denied. */
  undeclaredPermissions: string[]
}

interface DeclaredRoute { method: string, pattern: string, place: string }

/** What is wrong with a gateway path on which a route or alias would sit, if anything. */
function placementProblem (path: string): string | undefined {
  const reserved = reservedPrefixOf(path)
  if (reserved !== undefined) return `${path} is under ${reserved}, which the gateway never routes`
  if (isGatewayOwnPath(path)) return `${path} is the gateway's own ${path}`
  const own = gatewayOwnPrefixOf(path)
  if (own !== undefined) return `${path} is under ${own}, the gateway's own documentation`
  return undefined
}

function checkTarget (upstream: Upstream, place: string): string[] {
  try {
    const url = new URL(upstream.target)
    if (url.hostname === '') return [`${place}.target: has no host`]
    const reserved = reservedPrefixOf(basePathOf(upstream.target))
    return reserved !== undefined ? [`${place}.target: its base path ${basePathOf(upstream.target)} is under ${reserved}, ${NEVER_SENT}`] : []
  } catch {
    return [`${place}.target: is not a valid URL`]
  }
}

const NEVER_SENT = 'which the gateway never sends upstream'

/**
 * Where the upstream path of a route (its target's base path, then the route path
 * without the prefix) could fall under /admin or /internal, if it could. Identity may
 * sit behind any host name, so the rule holds for every upstream, not only for targets
 * that look like identity. A `:param` or `*` first upstream segment could be `admin`;
 * it is allowed only where the upstream path is the gateway path itself (prefix `/`, no
 * base path), because the gateway refuses reserved request paths before routing.
 */
function upstreamPathProblem (upstreamPattern: string, sameAsGatewayPath: boolean): string | undefined {
  const reach = reservedReachOf(upstreamPattern)
  if (reach === undefined) return undefined
  if (reach.startsWith('/')) return `is sent upstream as ${upstreamPattern}, under ${reach}, ${NEVER_SENT}`
  if (sameAsGatewayPath) return undefined
  return `is sent upstream as ${upstreamPattern}, whose first segment ${reach} could be admin or internal (${NEVER_SENT}): ` +
    'start the route with a static segment, or give the target a base path'
}

/** The base path, or undefined when the target is reported as invalid (or its base path as reserved) already. */
function usableBasePath (upstream: Upstream): string | undefined {
  try {
    const base = basePathOf(upstream.target)
    return reservedPrefixOf(base) === undefined ? base : undefined
  } catch {
    return undefined
  }
}

function checkRoutes (upstream: Upstream, place: string, declared: Map<string, DeclaredRoute>, out: SemanticFindings): DeclaredRoute[] {
  const routes: DeclaredRoute[] = []
  const prefixProblem = placementProblem(upstream.prefix)
  if (prefixProblem !== undefined) out.problems.push(`${place}.prefix: ${prefixProblem}`)
  const base = usableBasePath(upstream)
  upstream.routes.forEach((route, j) => {
    const where = `${place}.routes[${j}]`
    const pattern = joinPrefix(upstream.prefix, route.path)
    const label = `${route.method} ${pattern}`
    const params = pathSegments(route.path).filter((s) => s.startsWith(':'))
    const repeated = params.find((p, k) => params.indexOf(p) !== k)
    if (repeated !== undefined) out.problems.push(`${where}.path: the parameter ${repeated} appears twice`)
    if (route.websocket === true && route.method !== 'GET') out.problems.push(`${where}.websocket: only a GET route can be a WebSocket route (an upgrade is a GET)`)
    // A reserved prefix is reported once, on the prefix, not on each of its routes.
    const placement = prefixProblem === undefined ? placementProblem(pattern) : undefined
    if (placement !== undefined) out.problems.push(`${where}.path: ${placement}`)
    // Once per route: a gateway path already refused is not reported again for where it leads.
    const upstreamProblem = base === undefined || prefixProblem !== undefined || placement !== undefined
      ? undefined
      : upstreamPathProblem(withBasePath(base, route.path), upstream.prefix === '/' && base === '')
    if (upstreamProblem !== undefined) out.problems.push(`${where}.path: ${label} ${upstreamProblem}`)
    // By pattern key: `/me/keys/:keyId` is identity's `/me/keys/:id` under another parameter name. Named: the route of the same method, if any.
    const onPath = IDENTITY_ROUTES.filter((r) => patternKey(r.path) === patternKey(pattern))
    const identity = onPath.find((r) => r.method === route.method) ?? onPath[0]
    if (identity !== undefined) {
      out.problems.push(`${where}: ${label} collides with the built-in identity route ${identity.method} ${identity.path}`)
    }
    const key = `${route.method} ${patternKey(pattern)}`
    const earlier = declared.get(key)
    if (earlier !== undefined) out.problems.push(`${where}: ${label} is already declared at ${earlier.place}`)
    const entry = { method: route.method, pattern, place: where }
    if (earlier === undefined) declared.set(key, entry)
    routes.push(entry)
    out.problems.push(...trafficProblems(route.policies ?? [], upstream.policies ?? [], route.cost ?? 1, where))
    if (route.permission === undefined || route.permission === null) {
      out.undeclaredPermissions.push(`${where}.permission: ${label} declares no permission, so the gateway denies it to every caller`)
    }
  })
  return routes
}

/**
 * Policies of one place share no name, and a route's cost fits every rate limit and
 * quota declared for it here: a request costing more than a limit could never pass.
 */
function trafficProblems (own: readonly TrafficPolicy[], upstreams: readonly TrafficPolicy[], cost: number, where: string): string[] {
  const problems = policyListProblems(own).map((line) => `${where}.policies/${line}`)
  for (const policy of [...upstreams, ...own]) {
    if (policy.kind !== 'concurrency' && policy.limit < cost) {
      problems.push(`${where}.cost: ${cost} is more than the limit ${policy.limit} of policy "${policy.name}", so no request could pass`)
    }
  }
  return problems
}

/** The upstream path of an alias target at or under its upstream's prefix, else undefined (the routes' own check covers the rest). */
function upstreamPathOfAlias (upstream: Upstream, target: string): string | undefined {
  const base = usableBasePath(upstream)
  if (base === undefined || !isAtOrUnder(target, upstream.prefix)) return undefined
  return withBasePath(base, (upstream.prefix === '/' ? target : target.slice(upstream.prefix.length)) || '/')
}

function checkAliases (upstream: Upstream, place: string, own: DeclaredRoute[], all: DeclaredRoute[],
  aliases: Map<string, string>, out: SemanticFindings): void {
  for (const [source, target] of Object.entries(upstream.aliases)) {
    const where = `${place}.aliases.${source}`
    const problems: string[] = []
    const sourcePlacement = placementProblem(source)
    if (sourcePlacement !== undefined) problems.push(sourcePlacement)
    const targetPlacement = target === '/' ? undefined : placementProblem(target)
    if (targetPlacement !== undefined) problems.push(`its target ${targetPlacement}`)
    const identity = IDENTITY_ROUTES.find((r) => patternCanStartWith(r.path, source))
    if (identity !== undefined) problems.push(`collides with the built-in identity route ${identity.method} ${identity.path}`)
    for (const [other, otherPlace] of aliases) {
      if (isAtOrUnder(source, other) || isAtOrUnder(other, source)) problems.push(`collides with the alias declared at ${otherPlace}`)
    }
    // An alias in front of a route would rewrite requests meant for that route.
    const shadowed = all.find((r) => patternCanStartWith(r.pattern, source))
    if (shadowed !== undefined) problems.push(`collides with the route ${shadowed.method} ${shadowed.pattern} declared at ${shadowed.place}`)
    if (targetPlacement === undefined && !own.some((r) => patternCanStartWith(r.pattern, target))) {
      problems.push(`its target ${target} is not the start of any route of this upstream`)
    }
    const upstreamTarget = upstreamPathOfAlias(upstream, target)
    const reserved = upstreamTarget === undefined ? undefined : reservedPrefixOf(upstreamTarget)
    if (targetPlacement === undefined && reserved !== undefined) problems.push(`its target ${target} is sent upstream as ${upstreamTarget ?? ''}, under ${reserved}, ${NEVER_SENT}`)
    for (const problem of problems) out.problems.push(`${where}: ${problem}`)
    aliases.set(source, where)
  }
}

/**
 * The rules a schema cannot express: unique names, one declaration per method and
 * path across all upstreams, nothing on reserved or identity paths, no route or alias
 * whose upstream path (base path + path without the prefix) is or could be under
 * /admin or /internal, aliases that neither hide a route nor another alias and lead
 * somewhere, cors blocks that browsers can use (cors-checks.ts). Places are given as in
 * the file (`upstreams[1].routes[0]`), prefixed by the caller.
 */
export function checkSemantics (content: UpstreamsFileContent): SemanticFindings {
  const out: SemanticFindings = { problems: [], undeclaredPermissions: [] }
  const names = new Map<string, string>()
  const declared = new Map<string, DeclaredRoute>()
  const routesByUpstream: DeclaredRoute[][] = []
  content.upstreams.forEach((upstream, i) => {
    const place = `upstreams[${i}]`
    const sameName = names.get(upstream.name)
    if (upstream.name === IDENTITY_UPSTREAM_NAME) out.problems.push(`${place}.name: "${IDENTITY_UPSTREAM_NAME}" is reserved for the built-in identity routes`)
    else if (upstream.name === CONSOLE_UPSTREAM_NAME) out.problems.push(`${place}.name: "${CONSOLE_UPSTREAM_NAME}" is reserved for the built-in console routes`)
    else if (sameName !== undefined) out.problems.push(`${place}.name: "${upstream.name}" is already the name of ${sameName}`)
    else names.set(upstream.name, place)
    out.problems.push(...checkTarget(upstream, place))
    out.problems.push(...policyListProblems(upstream.policies ?? []).map((line) => `${place}.policies/${line}`))
    if (upstream.cors !== undefined) out.problems.push(...corsProblems(upstream.cors, upstream.routes, `${place}.cors`))
    routesByUpstream.push(checkRoutes(upstream, place, declared, out))
  })
  // Aliases are checked against every route, including those of later upstreams.
  const allRoutes = routesByUpstream.flat()
  const aliases = new Map<string, string>()
  content.upstreams.forEach((upstream, i) => {
    checkAliases(upstream, `upstreams[${i}]`, routesByUpstream[i] ?? [], allRoutes, aliases, out)
  })
  return out
}
