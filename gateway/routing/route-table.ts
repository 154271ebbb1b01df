import FindMyWay from 'find-my-way'
import { MAX_PATH_LENGTH } from './normalise-path.js'
import { ConfigError } from '../../common/config.js'
import {
  basePathOf, CONSOLE_PREFIX, CONSOLE_ROUTES, CONSOLE_UPSTREAM_NAME, IDENTITY_ROUTES, IDENTITY_UPSTREAM_NAME, isAtOrUnder, joinPrefix, patternKey, reservedPrefixOf, withBasePath
} from './paths.js'
import { grantsOf } from '../../common/permissions.js'
import { corsPolicyOf, routeCorsOf, type CorsPolicy } from './cors-policy.js'
import { DEFAULT_CONNECT_TIMEOUT_MS, DEFAULT_FAIR_SHARE, DEFAULT_RESPONSE_TIMEOUT_MS, DEFAULT_UPSTREAM_CONNECTIONS, HTTP_METHODS } from './schema.js'
import type {
  ResolvedRoute, ResolvedUpstream, RouteMatch, RouteTable, RouteTableOptions, RouteTraffic, UpstreamConfig, UpstreamRouteConfig, UpstreamsConfig
} from './types.js'

interface Entry { route: ResolvedRoute, prefix: string, cors: CorsPolicy | undefined }

const NOT_FOUND: RouteMatch = Object.freeze({ kind: 'not_found' })
const KNOWN_METHODS: ReadonlySet<string> = new Set(HTTP_METHODS)
const noop = (): void => {}
/** Identity's public routes: the gateway's default for anonymous routes applies instead (traffic control). */
const NO_TRAFFIC_POLICIES: RouteTraffic = Object.freeze({ policies: Object.freeze([]), cost: 1 })

/** The upstream's policies, then the route's own, each under the name of the place that declared it. */
function routeTraffic (upstream: UpstreamConfig, route: UpstreamRouteConfig, pattern: string): RouteTraffic {
  return Object.freeze({
    policies: Object.freeze([
      ...(upstream.policies ?? []).map((policy) => Object.freeze({ scope: `upstream:${upstream.name}`, policy })),
      ...(route.policies ?? []).map((policy) => Object.freeze({ scope: `route:${route.method}:${pattern}`, policy }))
    ]),
    cost: route.cost ?? 1
  })
}

function resolveUpstream (upstream: UpstreamConfig): ResolvedUpstream {
  return Object.freeze({
    name: upstream.name,
    origin: new URL(upstream.target).origin,
    basePath: basePathOf(upstream.target),
    keyCase: upstream.keyCase,
    timeouts: Object.freeze({ ...upstream.timeouts }),
    bodyLimitBytes: upstream.bodyLimitBytes ?? null,
    connections: upstream.connections,
    fairShare: upstream.fairShare
  })
}

/** A built-in upstream (identity's public listener, the console): snake_case JSON, the default timeouts and pool. */
function builtInUpstream (name: string, origin: string, extra: Partial<ResolvedUpstream> = {}): ResolvedUpstream {
  return Object.freeze({
    name,
    origin: new URL(origin).origin,
    basePath: '',
    keyCase: 'snake',
    timeouts: Object.freeze({ connectMs: DEFAULT_CONNECT_TIMEOUT_MS, responseMs: DEFAULT_RESPONSE_TIMEOUT_MS }),
    // The gateway gives identity's anonymous routes their own small limit (identityBodyLimitBytes).
    bodyLimitBytes: null,
    connections: DEFAULT_UPSTREAM_CONNECTIONS,
    fairShare: DEFAULT_FAIR_SHARE,
    ...extra
  })
}

/** The file's routes must leave the console's subtree to it, or a console page could be served by an upstream. */
function refuseRoutesUnderConsole (config: UpstreamsConfig): void {
  const problems: string[] = []
  config.upstreams.forEach((upstream, i) => {
    upstream.routes.forEach((route, j) => {
      const pattern = joinPrefix(upstream.prefix, route.path)
      if (isAtOrUnder(pattern, CONSOLE_PREFIX)) problems.push(`upstreams[${i}].routes[${j}]: ${route.method} ${pattern} is under ${CONSOLE_PREFIX}, which the console serves (consoleUrl is set)`)
    })
    for (const source of Object.keys(upstream.aliases)) {
      if (isAtOrUnder(source, CONSOLE_PREFIX)) problems.push(`upstreams[${i}].aliases: ${source} is under ${CONSOLE_PREFIX}, which the console serves (consoleUrl is set)`)
    }
  })
  if (problems.length > 0) throw new ConfigError('upstreams', problems)
}

/** The path the upstream gets: its base path, then the gateway path without the prefix. */
function upstreamPathOf (entry: Entry, canonicalPath: string): string {
  const rest = (entry.prefix === '/' ? canonicalPath : canonicalPath.slice(entry.prefix.length)) || '/'
  return withBasePath(entry.route.upstream.basePath, rest)
}

/** Longest whole-segment alias source first: `/utilisateurs/42` → `/users/42`. */
function resolveAlias (aliases: ReadonlyMap<string, string>, path: string): string {
  if (aliases.size === 0) return path
  for (let end = path.length; end > 0; end = path.lastIndexOf('/', end - 1)) {
    const target = aliases.get(path.slice(0, end))
    if (target !== undefined) {
      const rest = path.slice(end)
      return target === '/' ? rest || '/' : target + rest
    }
  }
  return path
}

/**
 * Builds the table that maps a method and a normalised path to a route. Identity's
 * public routes are always there (no credential check by the gateway); /admin and
 * /internal never match, whatever `config` says, and neither does a path that an
 * upstream would receive under /admin or /internal (after its prefix is taken off and
 * its base path put on). GET routes answer HEAD too unless HEAD is declared for the
 * same path. Throws if two routes share a method and
 * pattern (the loader reports that first, with its place in the file).
 */
export function buildRouteTable (config: UpstreamsConfig, options: RouteTableOptions): RouteTable {
  const router = FindMyWay({ caseSensitive: true, ignoreTrailingSlash: false, ignoreDuplicateSlashes: false, maxParamLength: MAX_PATH_LENGTH })
  const identity = builtInUpstream(IDENTITY_UPSTREAM_NAME, options.identityOrigin)
  const consoleUpstream = options.consoleOrigin === undefined ? null : builtInUpstream(CONSOLE_UPSTREAM_NAME, options.consoleOrigin, { formBodies: true })
  if (consoleUpstream !== null) refuseRoutesUnderConsole(config)
  const builtIn = consoleUpstream === null ? [identity] : [identity, consoleUpstream]
  const upstreams = [...builtIn, ...config.upstreams.map(resolveUpstream)]
  const entries: Entry[] = []
  const add = (method: string, pattern: string, permission: string | null, auth: 'required' | 'none', upstream: ResolvedUpstream, prefix: string,
    traffic: RouteTraffic, websocket = false, cors?: CorsPolicy): void => {
    const grantedBy = Object.freeze(permission === null ? [] : grantsOf(permission))
    const route: ResolvedRoute = { method, pattern, permission, auth, grantedBy, websocket, upstream, traffic }
    // Only a route of an upstream with a cors block has the member at all.
    if (cors !== undefined) route.cors = routeCorsOf(cors, route)
    const entry = { route: Object.freeze(route), prefix, cors }
    router.on(method as FindMyWay.HTTPMethod, pattern, noop, entry)
    entries.push(entry)
  }
  for (const route of IDENTITY_ROUTES) add(route.method, route.path, null, 'none', identity, '/', NO_TRAFFIC_POLICIES)
  // The console's pages keep their path (/console/…): the console serves under the same prefix whether reached directly or not.
  if (consoleUpstream !== null) for (const route of CONSOLE_ROUTES) add(route.method, route.path, null, 'none', consoleUpstream, '/', NO_TRAFFIC_POLICIES)
  const aliases = new Map<string, string>()
  config.upstreams.forEach((upstream, i) => {
    const resolved = upstreams[i + builtIn.length] as ResolvedUpstream
    const cors = upstream.cors === undefined ? undefined : corsPolicyOf(upstream.cors)
    for (const route of upstream.routes) {
      const pattern = joinPrefix(upstream.prefix, route.path)
      add(route.method, pattern, route.permission, 'required', resolved, upstream.prefix, routeTraffic(upstream, route, pattern), route.websocket === true, cors)
    }
    for (const [source, target] of Object.entries(upstream.aliases)) if (!aliases.has(source)) aliases.set(source, target)
  })
  const routeCount = entries.length
  const routes = Object.freeze(entries.map((e) => e.route))
  const explicitHead = new Set(entries.filter((e) => e.route.method === 'HEAD').map((e) => patternKey(e.route.pattern)))
  for (const { route, prefix, cors } of entries.slice()) {
    if (route.method === 'GET' && !explicitHead.has(patternKey(route.pattern))) {
      add('HEAD', route.pattern, route.permission, route.auth, route.upstream, prefix, route.traffic, false, cors)
    }
  }

  const find = (method: string, path: string): Entry | undefined => {
    if (!KNOWN_METHODS.has(method)) return undefined
    const found = router.find(method as FindMyWay.HTTPMethod, path)
    if (found === null) return undefined
    // Only `/` can give an empty parameter or wildcard; `*` means at least one character.
    for (const value of Object.values(found.params)) if (value === '') return undefined
    return found.store as Entry
  }
  /**
   * The route and the path its upstream would receive, unless that path is under /admin
   * or /internal. The loader refuses every config that could send one there; this is
   * the second line, whatever a config or a future rule lets through.
   */
  const routable = (method: string, canonical: string): { entry: Entry, upstreamPath: string } | undefined => {
    const entry = find(method, canonical)
    if (entry === undefined) return undefined
    const upstreamPath = upstreamPathOf(entry, canonical)
    return reservedPrefixOf(upstreamPath) === undefined ? { entry, upstreamPath } : undefined
  }

  return Object.freeze({
    routeCount,
    upstreams: Object.freeze(upstreams),
    routes,
    aliases,
    hasCors: config.upstreams.some((upstream) => upstream.cors !== undefined),
    match (method: string, normalisedPath: string): RouteMatch {
      if (reservedPrefixOf(normalisedPath) !== undefined) return NOT_FOUND
      const canonical = resolveAlias(aliases, normalisedPath)
      if (reservedPrefixOf(canonical) !== undefined) return NOT_FOUND
      const found = routable(method, canonical)
      if (found !== undefined) return { kind: 'route', route: found.entry.route, upstreamPath: found.upstreamPath }
      const allow = HTTP_METHODS.filter((m) => routable(m, canonical) !== undefined)
      return allow.length > 0 ? { kind: 'method_not_allowed', allow } : NOT_FOUND
    }
  })
}
