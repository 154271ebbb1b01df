import { DOCS_PREFIX, DOCUMENT_PATH } from '../../common/documentation-paths.js'
import type { HttpMethod } from './schema.js'

/**
 * Identity's listeners serve /admin/* and /internal/*; the gateway never routes them,
 * whatever the config says, and compares without regard to letter case because an
 * upstream behind a `/*` route might not.
 */
export const RESERVED_PREFIXES: readonly string[] = Object.freeze(['/admin', '/internal'])
/** The gateway answers these itself (health, readiness, Prometheus, its OpenAPI document). */
export const GATEWAY_OWN_PATHS: readonly string[] = Object.freeze(['/healthz', '/readyz', '/metrics', DOCUMENT_PATH])
/**
 * The gateway's Swagger UI and its assets: the whole subtree is the gateway's, reserved
 * even where documentationRoutes is off, so one upstreams file means the same everywhere.
 */
export const GATEWAY_OWN_PREFIXES: readonly string[] = Object.freeze([DOCS_PREFIX])

/** The built-in upstream that serves identity's public routes; no file may use the name. */
export const IDENTITY_UPSTREAM_NAME = 'identity'

export interface IdentityRoute { readonly method: HttpMethod, readonly path: string }

/** Routes identity serves through the gateway, without a credential check by the gateway. */
export const IDENTITY_ROUTES: readonly IdentityRoute[] = Object.freeze(([
  { method: 'POST', path: '/sessions' },
  { method: 'DELETE', path: '/sessions/current' },
  { method: 'POST', path: '/tokens' },
  // Identity serves the French path itself, so it is forwarded as is rather than aliased.
  { method: 'POST', path: '/jetons' },
  { method: 'GET', path: '/.well-known/jwks.json' },
  // Self-service: identity checks the access token itself (an API key is refused there).
  { method: 'GET', path: '/me' },
  { method: 'GET', path: '/me/keys' },
  { method: 'POST', path: '/me/keys' },
  { method: 'GET', path: '/me/keys/:id' },
  { method: 'POST', path: '/me/keys/:id/rotate' },
  { method: 'POST', path: '/me/keys/:id/revoke' },
  { method: 'GET', path: '/me/keys/:id/usage' },
  { method: 'GET', path: '/me/sessions' },
  { method: 'DELETE', path: '/me/sessions/:id' },
  { method: 'POST', path: '/me/sessions/revoke-others' }
] satisfies IdentityRoute[]).map((route) => Object.freeze(route)))

/** The built-in upstream that serves the back-office console, when the gateway is given its URL; no file may use the name. */
export const CONSOLE_UPSTREAM_NAME = 'console'
/** The console's pages and assets: the whole subtree is the console's when it is served. */
export const CONSOLE_PREFIX = '/console'

/** Routes the console serves through the gateway (it checks its own session cookie): pages are GET, forms POST. */
export const CONSOLE_ROUTES: readonly IdentityRoute[] = Object.freeze(([
  { method: 'GET', path: CONSOLE_PREFIX },
  { method: 'GET', path: `${CONSOLE_PREFIX}/*` },
  { method: 'POST', path: `${CONSOLE_PREFIX}/*` }
] satisfies IdentityRoute[]).map((route) => Object.freeze(route)))

/** `/a/b` → ['a', 'b']; `/` → []. */
export function pathSegments (path: string): string[] {
  return path === '/' ? [] : path.slice(1).split('/')
}

/** A route path relative to its upstream's prefix, as the gateway sees it. */
export function joinPrefix (prefix: string, path: string): string {
  if (prefix === '/') return path
  return path === '/' ? prefix : prefix + path
}

/** The reserved prefix `path` falls under (whole first segment, any letter case), if any. */
export function reservedPrefixOf (path: string): string | undefined {
  // On every request (three times): the first segment without splitting the whole path.
  const end = path.indexOf('/', 1)
  const first = (end === -1 ? path : path.slice(0, end)).toLowerCase()
  return RESERVED_PREFIXES.find((prefix) => prefix === first)
}

/** An upstream target's base path: its URL path without the trailing slash, `''` for none. */
export function basePathOf (target: string): string {
  return new URL(target).pathname.replace(/\/$/, '')
}

/** The path an upstream receives: its base path, then `rest` (the gateway path without the prefix, `/` for none). */
export function withBasePath (basePath: string, rest: string): string {
  if (basePath === '') return rest
  return rest === '/' ? basePath : basePath + rest
}

/**
 * Could an upstream path sent by this pattern fall under a reserved prefix? The reserved
 * prefix for a static first segment that is one (any letter case); the segment itself
 * for a `:param` or `*` first segment, which a request can fill with `admin`; undefined
 * otherwise.
 */
export function reservedReachOf (upstreamPattern: string): string | undefined {
  const first = pathSegments(upstreamPattern)[0]
  if (first === undefined) return undefined
  if (first === '*' || first.startsWith(':')) return first
  return reservedPrefixOf(upstreamPattern)
}

export function isGatewayOwnPath (path: string): boolean {
  return GATEWAY_OWN_PATHS.includes(path)
}

/** The gateway's own prefix `path` is at or under (whole segments, exact case as Fastify routes it), if any. */
export function gatewayOwnPrefixOf (path: string): string | undefined {
  return GATEWAY_OWN_PREFIXES.find((prefix) => isAtOrUnder(path, prefix))
}

/** Two patterns that differ only in parameter names match the same requests. */
export function patternKey (pattern: string): string {
  return pattern.replace(/\/:[A-Za-z0-9_]+/g, '/:')
}

/**
 * Can some path matched by `pattern` start with the whole segments of `path`? True for
 * `/users` against `/users/:id`, `/users/7` against `/users/:id`, anything against a `*`
 * reached, and `/` against every pattern; false for `/users/7` against `/users`.
 */
export function patternCanStartWith (pattern: string, path: string): boolean {
  const wanted = pathSegments(path)
  const segments = pathSegments(pattern)
  for (let i = 0; i < wanted.length; i++) {
    const segment = segments[i]
    if (segment === undefined) return false
    if (segment === '*') return true
    if (!segment.startsWith(':') && segment !== wanted[i]) return false
  }
  return true
}

/** Is `path` equal to `prefix` or below it, by whole segments? */
export function isAtOrUnder (path: string, prefix: string): boolean {
  return prefix === '/' || path === prefix || path.startsWith(`${prefix}/`)
}
