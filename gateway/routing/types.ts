import type { TrafficPolicy } from '../../common/traffic/policy.js'
import type { KeyCase } from '../inflection/styles.js'

export type { KeyCase }

export interface UpstreamTimeouts {
  /** Time to open the connection, ms (default 2000). */
  connectMs: number
  /** Time to the response headers and between body chunks, ms (default 10000). */
  responseMs: number
}

export interface UpstreamRouteConfig {
  method: string
  /** Relative to the upstream's prefix. */
  path: string
  /** null: declared but denied to every caller. */
  permission: string | null
  /** Absent: none of its own. */
  policies?: TrafficPolicy[]
  /** Units one request takes from each rate limit and quota; absent: 1. */
  cost?: number
  /** An upgrade to a WebSocket; absent: false. */
  websocket?: boolean
}

/** Which browser origins may call an upstream's routes, every default applied. */
export interface UpstreamCorsConfig {
  /** Exact origins (`https://app.example.com`), or `*` alone. */
  origins: string[]
  /** Methods a preflight may ask for: the file's, or every method its routes declare (HEAD with GET). */
  methods: string[]
  /** Request headers a browser may send. */
  headers: string[]
  /** Response headers the browser app may read; absent: none beyond the CORS-safelisted ones. */
  expose_headers?: string[]
  credentials: boolean
  /** Seconds a browser may cache a preflight's answer. */
  max_age: number
}

export interface UpstreamConfig {
  name: string
  target: string
  prefix: string
  keyCase: KeyCase
  timeouts: UpstreamTimeouts
  /** Largest request body of its routes; absent: the gateway's bodyLimitBytes. */
  bodyLimitBytes?: number
  /** The pool of connections to it. */
  connections: number
  /** The most of the pool one principal holds in flight (1: no bound). */
  fairShare: number
  /** Absolute gateway path → canonical absolute gateway path. */
  aliases: Record<string, string>
  routes: UpstreamRouteConfig[]
  /** Absent: none. */
  policies?: TrafficPolicy[]
  /** Absent: the gateway adds no CORS headers to its answers and answers no preflight for it. */
  cors?: UpstreamCorsConfig
}

/** The upstreams file with every default applied, deeply frozen. */
export interface UpstreamsConfig { upstreams: UpstreamConfig[] }

export interface LoadedUpstreams {
  config: UpstreamsConfig
  /** Lines to log at start (routes without a permission), each naming the file and place. */
  warnings: string[]
}

export interface LoadOptions {
  /** Treat warnings as errors (what `portier config check` does). Default false. */
  strict?: boolean
}

export interface ResolvedUpstream {
  name: string
  /** Scheme, host and port only, e.g. `http://127.0.0.1:4000`. */
  origin: string
  /** The target's path without a trailing slash: `''` or e.g. `/api`. */
  basePath: string
  keyCase: KeyCase
  timeouts: UpstreamTimeouts
  /** Largest request body of its routes; null: the gateway's own limit for such routes. */
  bodyLimitBytes: number | null
  /** The pool of connections to it (an origin two upstreams share takes the first one's). */
  connections: number
  /** The most of the pool one principal holds in flight (1: no bound). */
  fairShare: number
  /** Its routes take HTML form posts (urlencoded), forwarded as sent: the console's. Absent: JSON bodies only. */
  formBodies?: true
}

/** A policy and where it was declared: `upstream:<name>` or `route:<METHOD>:<pattern>` (counts of two places never mix). */
export interface ScopedPolicy { scope: string, policy: TrafficPolicy }

/** What traffic control applies to a route: its own and its upstream's policies, and its cost. */
export interface RouteTraffic {
  policies: readonly ScopedPolicy[]
  cost: number
}

export interface ResolvedRoute {
  method: string
  /** The full gateway pattern (prefix included), e.g. `/billing/invoices/:id`. */
  pattern: string
  permission: string | null
  /** `none` for identity's own routes (login, refresh, logout, JWKS). */
  auth: 'required' | 'none'
  /** The permissions any one of which grants `permission` (itself, its resource's `*`, `*`), prepared once; empty when it is null. */
  grantedBy: readonly string[]
  /** An upgrade to a WebSocket, proxied once it passes the checks. */
  websocket: boolean
  upstream: ResolvedUpstream
  traffic: RouteTraffic
  /** Present only when its upstream has a cors block: a route without one costs the request path a property check. */
  cors?: RouteCors
}

/** What the gateway tells a browser about one route, worked out when the table is built. */
export interface RouteCors {
  /** Fields (name, value pairs) every answer to a request from `origin` carries; for an origin not allowed, `Vary: Origin` alone. */
  answerFields: (origin: string) => readonly string[]
  /** Fields of a preflight's 204 for `origin`, or null for an origin not allowed. */
  preflightFields: (origin: string) => readonly string[] | null
  /** Whether the cors block's methods include this route's, so a preflight may ask for it. */
  readonly methodAllowed: boolean
  /** The route as traffic control sees a preflight of it: anonymous, so the anonymous policies apply and nothing else. */
  readonly preflightRoute: ResolvedRoute
}

export type RouteMatch =
  /** `upstreamPath`: basePath + the alias-resolved path without the prefix; no query. */
  | { kind: 'route', route: ResolvedRoute, upstreamPath: string }
  | { kind: 'method_not_allowed', allow: string[] }
  | { kind: 'not_found' }

export interface RouteTable {
  /** `normalisedPath` must come from normalisePath (no query, no trailing slash). */
  match (method: string, normalisedPath: string): RouteMatch
  /** Declared routes: the file's plus identity's five; implicit HEADs not counted. */
  readonly routeCount: number
  /** Identity's first, then the file's in order. */
  readonly upstreams: readonly ResolvedUpstream[]
  /** The declared routes (routeCount of them): identity's, then the file's in order; implicit HEADs not listed. */
  readonly routes: readonly ResolvedRoute[]
  /** Alias path → canonical path, as applied before matching (the first declaration of a path wins). */
  readonly aliases: ReadonlyMap<string, string>
  /** Some upstream has a cors block: only then can a request be a preflight the gateway answers. */
  readonly hasCors: boolean
}

export interface RouteTableOptions {
  /** Where identity's public listener is, e.g. `http://127.0.0.1:3001`. */
  identityOrigin: string
  /** Where the back-office console is; absent: no console routes. */
  consoleOrigin?: string
}

/** `part` says whether the path or the query string was refused. */
export type NormalisedPath = { ok: true, path: string, search: string } | { ok: false, reason: string, part: 'path' | 'query' }
