/*
 * The upstreams file: which upstream services the gateway fronts, and for each one
 * which routes exist and which permission each route needs. YAML (.yaml, .yml) or
 * JSON (.json); every member below is checked, unknown members are errors.
 *
 *   upstreams:                         # required, at least 1
 *     - name: backoffice               # required; ^[a-z][a-z0-9-]{0,62}$, unique, not "identity"
 *       target: http://127.0.0.1:4000  # required; http(s) URL, may carry a base path
 *                                      #   (http://svc:8080/api); no credentials, query or fragment
 *       prefix: /                      # default "/": gateway path prefix; route paths are relative
 *                                      #   to it and the prefix is NOT sent upstream
 *       keyCase: snake                 # default snake: camel | dash | snake | pascal, the
 *                                      #   upstream's native JSON key case
 *       timeouts:                      # optional
 *         connectMs: 2000              # default 2000, 1..60000
 *         responseMs: 10000            # default 10000, 1..600000: from the start of the call
 *                                      #   (queue and connect included) to the response headers,
 *                                      #   then between body chunks
 *       bodyLimitBytes: 4194304        # optional, 1024..67108864: largest request body of its
 *                                      #   routes; unset: the gateway's bodyLimitBytes
 *       connections: 128               # default 128, 1..4096: the pool of connections to it
 *       fairShare: 0.5                 # default 0.5, >0..1: the most of that pool one principal
 *                                      #   (a key, a user, a client network) holds in flight;
 *                                      #   past it, 429 concurrency_limited; 1 turns it off
 *       aliases:                       # default {}: gateway path → canonical gateway path,
 *         /utilisateurs: /users        #   absolute, by whole segments (/utilisateurs/42 → /users/42)
 *       routes:                        # required, at least 1
 *         - { method: GET,  path: /users,     permission: users:list }
 *         - { method: GET,  path: /feed,      permission: feed:read, websocket: true }  # an upgrade to
 *                                      #   a WebSocket, proxied once authenticated, authorised, counted
 *         - { method: GET,  path: /users/:id, permission: users:read }
 *         - { method: GET,  path: /reports/*, permission: null }  # denied to every caller
 *         - method: POST                # a route may have traffic policies of its own, and a
 *           path: /exports              #   cost (default 1): the units one request takes from
 *           permission: exports:create  #   every rate limit and quota that covers it
 *           cost: 10
 *           policies:
 *             - { name: exports, kind: rate, limit: 100, window_seconds: 3600, partition: user }
 *       policies:                      # optional: traffic policies of every route of the upstream
 *         - { name: backoffice, kind: rate, limit: 1000, window_seconds: 10, partition: key }
 *         - { name: pool, kind: concurrency, limit: 64, partition: upstream }
 *       cors:                          # optional: browsers on these origins may call its routes
 *         origins: [https://app.example.com]  # required: exact scheme://host[:port] origins, or ["*"]
 *         methods: [GET, POST]         # default: the methods its routes declare (HEAD with GET)
 *         headers: [authorization]     # default: accept, authorization, content-type, x-api-key,
 *                                      #   x-api-inflection, x-request-id (request headers allowed)
 *         expose_headers: [ratelimit]  # optional: response headers the browser app may read
 *         credentials: false           # default false; never with origins ["*"]
 *         max_age: 600                 # default 600, 0..86400: seconds a preflight is cached
 *
 * method: GET HEAD POST PUT PATCH DELETE OPTIONS, upper case. HEAD is served wherever GET
 * is declared unless HEAD is declared itself.
 * path: starts with `/`; segments are static ([A-Za-z0-9._~-], not ending in `.`, so no
 * `.`/`..`), `:name` parameters, or one final `*` (the rest of the path, at least one
 * character); no `//`, no trailing `/` except `/` itself.
 * permission: `resource:action`, `resource:*` or `*`; null or absent means the route is
 * declared but denied (a warning when the gateway loads the file, an error for
 * `portier config check`).
 *
 * Checked after this schema (gateway/routing/semantic-checks.ts): unique names, no
 * method + path declared twice, aliases that neither collide nor dangle, nothing under
 * /admin or /internal, on the gateway or sent upstream (base path + path without the
 * prefix, a `:param` or `*` first counting as possibly reserved), nothing on /healthz
 * /readyz /metrics /openapi.json, under /docs or on the identity routes.
 */
import { Type, type Static } from 'typebox'
import { PERMISSION_PATTERN } from '../../common/permissions.js'
import { TrafficPolicies } from '../../common/traffic/policy.js'
import { KEY_CASES } from '../inflection/styles.js'

export const HTTP_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const
export type HttpMethod = typeof HTTP_METHODS[number]

export const DEFAULT_PREFIX = '/'
export const DEFAULT_KEY_CASE = 'snake'
export const DEFAULT_CONNECT_TIMEOUT_MS = 2_000
export const DEFAULT_RESPONSE_TIMEOUT_MS = 10_000
export const MAX_CONNECT_TIMEOUT_MS = 60_000
export const MAX_RESPONSE_TIMEOUT_MS = 600_000
/** A body is held whole while it is forwarded (and inflected), so an upstream's own limit stays modest. */
export const MAX_BODY_LIMIT_BYTES = 67_108_864
/** Connections the gateway keeps to one upstream unless its entry says otherwise. */
export const DEFAULT_UPSTREAM_CONNECTIONS = 128
export const MAX_UPSTREAM_CONNECTIONS = 4_096
/** The most of an upstream's pool one principal holds in flight unless its entry says otherwise. */
export const DEFAULT_FAIR_SHARE = 0.5
/** Most units one request may cost. */
export const MAX_ROUTE_COST = 1_000
/** Request headers a browser may send cross-origin unless the upstream's cors block lists its own. */
export const DEFAULT_CORS_HEADERS = ['accept', 'authorization', 'content-type', 'x-api-key', 'x-api-inflection', 'x-request-id']
/** Seconds a browser may cache a preflight's answer unless the cors block says otherwise. */
export const DEFAULT_CORS_MAX_AGE = 600
/** Firefox's own cap; Chromium caps at 7200 whatever is sent. */
export const MAX_CORS_MAX_AGE = 86_400
/** Longest route pattern, prefix or alias path; request paths are capped at 2048. */
const MAX_PATTERN_LENGTH = 1_024

// A segment may hold dots but not end with one: that rules out `.` and `..`, and
// request paths with such segments are refused anyway (normalise-path.ts).
const STATIC_SEGMENT = '[A-Za-z0-9._~-]*[A-Za-z0-9_~-]'
// find-my-way ends a parameter name at `-` or `.`, so names keep to identifier characters.
const PARAM_SEGMENT = ':[A-Za-z_][A-Za-z0-9_]*'

export const NAME_PATTERN = '^[a-z][a-z0-9-]{0,62}$'
export const ROUTE_PATH_PATTERN = `^(?:/|(?=/)(?:/(?:${STATIC_SEGMENT}|${PARAM_SEGMENT}))*(?:/\\*)?)$`
export const STATIC_PATH_PATTERN = `^(?:/|(?:/${STATIC_SEGMENT})+)$`
export const ALIAS_SOURCE_PATTERN = `^(?:/${STATIC_SEGMENT})+$`
// The authority may not hold `@` (credentials); the URL parser checks host and port after.
export const TARGET_PATTERN = `^https?://[^/?#@\\s]+(?:/${STATIC_SEGMENT})*/?$`

// A field name (RFC 9110 §5.1 token).
export const HEADER_NAME_PATTERN = "^[!#$%&'*+.^_`|~0-9A-Za-z-]+$"

/** What to say instead of a regular expression when a value does not match it. */
export const PATTERN_MESSAGES: ReadonlyMap<string, string> = new Map([
  [NAME_PATTERN, 'must be 1 to 63 characters: a lower-case letter, then lower-case letters, digits or -'],
  [ROUTE_PATH_PATTERN, 'must be a path pattern: / or /segments of [A-Za-z0-9._~-] (not ending in .), :param or a final *; no //, no trailing /'],
  [STATIC_PATH_PATTERN, 'must be / or /segments of [A-Za-z0-9._~-] (not ending in .); no parameters, no //, no trailing /'],
  [ALIAS_SOURCE_PATTERN, 'is not a valid alias path: it must be /segments of [A-Za-z0-9._~-] (not ending in .); not /, no parameters, no //, no trailing /'],
  [TARGET_PATTERN, 'must be an http:// or https:// URL, optionally with a base path of static segments; no credentials, query or fragment'],
  [HEADER_NAME_PATTERN, 'must be a header name: letters, digits and !#$%&\'*+.^_`|~-']
])

const closed = { additionalProperties: false } as const

export const RouteSchema = Type.Object({
  method: Type.Enum(HTTP_METHODS),
  path: Type.String({ pattern: ROUTE_PATH_PATTERN, maxLength: MAX_PATTERN_LENGTH }),
  // One schema rather than a union so a bad value gets one message, not one per branch.
  permission: Type.Optional(Type.Unsafe<string | null>({ type: ['string', 'null'], pattern: PERMISSION_PATTERN })),
  /** Traffic policies of this route alone (common/traffic/policy.ts). */
  policies: Type.Optional(TrafficPolicies),
  /** Units one request takes from every rate limit and quota that covers it. */
  cost: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_ROUTE_COST })),
  /** A WebSocket route: its GET is an upgrade, proxied once it passes the checks (GET only). */
  websocket: Type.Optional(Type.Boolean())
}, closed)

export const TimeoutsSchema = Type.Object({
  connectMs: Type.Integer({ minimum: 1, maximum: MAX_CONNECT_TIMEOUT_MS, default: DEFAULT_CONNECT_TIMEOUT_MS }),
  responseMs: Type.Integer({ minimum: 1, maximum: MAX_RESPONSE_TIMEOUT_MS, default: DEFAULT_RESPONSE_TIMEOUT_MS })
}, { ...closed, default: {} })

const headerNames = (options: { default?: string[] } = {}) => Type.Array(Type.String({ pattern: HEADER_NAME_PATTERN, maxLength: 256 }), { maxItems: 64, ...options })

/** Which browser origins may call the upstream's routes (checked further in routing/cors-checks.ts). */
export const CorsSchema = Type.Object({
  origins: Type.Array(Type.String({ maxLength: 2_048 }), { minItems: 1, maxItems: 256 }),
  methods: Type.Optional(Type.Array(Type.Enum(HTTP_METHODS), { minItems: 1 })),
  headers: headerNames({ default: DEFAULT_CORS_HEADERS }),
  expose_headers: Type.Optional(headerNames()),
  credentials: Type.Boolean({ default: false }),
  max_age: Type.Integer({ minimum: 0, maximum: MAX_CORS_MAX_AGE, default: DEFAULT_CORS_MAX_AGE })
}, closed)

export const UpstreamSchema = Type.Object({
  name: Type.String({ pattern: NAME_PATTERN }),
  target: Type.String({ pattern: TARGET_PATTERN, maxLength: 2_048 }),
  prefix: Type.String({ pattern: STATIC_PATH_PATTERN, maxLength: MAX_PATTERN_LENGTH, default: DEFAULT_PREFIX }),
  keyCase: Type.Enum(KEY_CASES as readonly ['camel', 'dash', 'snake', 'pascal'], { default: DEFAULT_KEY_CASE }),
  timeouts: TimeoutsSchema,
  bodyLimitBytes: Type.Optional(Type.Integer({ minimum: 1_024, maximum: MAX_BODY_LIMIT_BYTES })),
  connections: Type.Integer({ minimum: 1, maximum: MAX_UPSTREAM_CONNECTIONS, default: DEFAULT_UPSTREAM_CONNECTIONS }),
  fairShare: Type.Number({ exclusiveMinimum: 0, maximum: 1, default: DEFAULT_FAIR_SHARE }),
  aliases: Type.Record(
    Type.String({ pattern: ALIAS_SOURCE_PATTERN }),
    Type.String({ pattern: STATIC_PATH_PATTERN, maxLength: MAX_PATTERN_LENGTH }),
    { ...closed, default: {} }),
  routes: Type.Array(RouteSchema, { minItems: 1 }),
  /** Traffic policies of every route of this upstream. */
  policies: Type.Optional(TrafficPolicies),
  /** Browser origins that may call its routes; absent: the gateway adds no CORS headers for it. */
  cors: Type.Optional(CorsSchema)
}, closed)

export const UpstreamsFileSchema = Type.Object({
  upstreams: Type.Array(UpstreamSchema, { minItems: 1 })
}, closed)

/** The file's content once the schema has passed and filled in the defaults. */
export type UpstreamsFileContent = Static<typeof UpstreamsFileSchema>
