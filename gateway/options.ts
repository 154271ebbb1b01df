import { Type, type Static } from 'typebox'
import { B64TOKEN_PATTERN } from '../common/credentials.js'
import { DEFAULT_BUFFERED_BODIES_MAX_BYTES, MIN_BUFFERED_BODIES_MAX_BYTES } from '../common/listener-limits.js'
import { parseRedisTarget, type RedisTarget } from '../common/redis-config.js'
import { TrafficPolicies, type TrafficPolicy } from '../common/traffic/policy.js'
import { hostProblem } from './host-header.js'
import { DEFAULT_MAX_DEPTH } from './inflection/limits.js'

/**
 * Identity's public routes (login, refresh, logout, JWKS) take no credential: each
 * client network gets this many requests a minute, on top of identity's own login
 * throttle (which counts failed passwords).
 */
export const DEFAULT_ANONYMOUS_POLICIES: TrafficPolicy[] = [{ name: 'anonymous', kind: 'rate', limit: 600, window_seconds: 60, partition: 'ip' }]

/** Largest request body of an upstream route unless set: the standalone server's own body limit too. */
export const DEFAULT_BODY_LIMIT_BYTES = 1_048_576

/**
 * The gateway plugin's options, validated when the plugin is registered (a bad value
 * fails `app.register` with a message naming the option). Durations are in seconds,
 * sizes in bytes or entries. The one table of the gateway's defaults and bounds: the
 * standalone server's environment variables (gateway/config.ts) take theirs from it,
 * and build these options; a host app passes them directly.
 */
export const GatewayOptionsSchema = Type.Object({
  /** Path of the upstreams file (YAML or JSON). Exactly one of upstreamsFile / upstreams. */
  upstreamsFile: Type.Optional(Type.String({ minLength: 1 })),
  /** The upstreams config as an object, in the file's shape. */
  upstreams: Type.Optional(Type.Object({ upstreams: Type.Array(Type.Unknown()) })),
  /** Reload the upstreams file when it changes on disk (SIGHUP always reloads in the server). */
  watchUpstreamsFile: Type.Optional(Type.Boolean({ default: false })),
  identity: Type.Object({
    publicUrl: Type.String({ format: 'uri', pattern: '^https?://' }),
    internalUrl: Type.String({ format: 'uri', pattern: '^https?://' }),
    serviceToken: Type.String({ minLength: 32 }),
    issuer: Type.Optional(Type.String({ minLength: 1, default: 'portier-identity' })),
    audience: Type.Optional(Type.String({ minLength: 1, default: 'portier-gateway' })),
    timeoutMs: Type.Optional(Type.Integer({ minimum: 100, maximum: 60_000, default: 2_000 }))
  }, { additionalProperties: false }),
  /** The back-office console (its own service): `/console` and `/console/*` are forwarded to it, without a credential check by the gateway. Absent: no console routes. */
  consoleUrl: Type.Optional(Type.String({ format: 'uri', pattern: '^https?://' })),
  /** A standalone Redis (redis:// or rediss://). At most one of redisUrl / redisClusterNodes. */
  redisUrl: Type.Optional(Type.String({ minLength: 1 })),
  /** A Redis Cluster's seed nodes, each host:port or a redis:// / rediss:// URL. */
  redisClusterNodes: Type.Optional(Type.Array(Type.String({ minLength: 1 }), { minItems: 1 })),
  eventsChannel: Type.Optional(Type.String({ minLength: 1, default: 'portier:events' })),
  keyCache: Type.Optional(Type.Object({
    // Sized for the keys a busy back office has in use at once (about 20 MiB when full): a miss costs a Redis round trip.
    l1MaxEntries: Type.Optional(Type.Integer({ minimum: 1, default: 50_000 })),
    l1TtlSeconds: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: 3_600, default: 30 })),
    l2TtlSeconds: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: 86_400, default: 300 })),
    negativeTtlSeconds: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: 300, default: 5 }))
  }, { additionalProperties: false, default: {} })),
  tokenCacheMaxEntries: Type.Optional(Type.Integer({ minimum: 1, default: 10_000 })),
  jwksCooldownSeconds: Type.Optional(Type.Number({ minimum: 0, maximum: 3_600, default: 30 })),
  revocationSyncSeconds: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: 3_600, default: 30 })),
  /** How often the API key uses counted here are reported to identity; uses not reported yet are lost in a crash. */
  keyUsageFlushSeconds: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: 300, default: 5 })),
  /** Most keys (secrets) whose uses are held until reported; a key beyond is not counted (logged, and a metric). */
  keyUsageMaxKeys: Type.Optional(Type.Integer({ minimum: 1, maximum: 10_000_000, default: 100_000 })),
  /** Largest request body of an upstream route (an upstream may set its own in the upstreams file). */
  bodyLimitBytes: Type.Optional(Type.Integer({ minimum: 1_024, default: DEFAULT_BODY_LIMIT_BYTES })),
  /** Largest request body of identity's routes (login, refresh, logout), which take no credential at the gateway. */
  identityBodyLimitBytes: Type.Optional(Type.Integer({ minimum: 1_024, maximum: 1_048_576, default: 8_192 })),
  /** Request body bytes held at once across every request in flight; beyond, 503 `bodies_at_capacity`. */
  bufferedBodiesMaxBytes: Type.Optional(Type.Integer({ minimum: MIN_BUFFERED_BODIES_MAX_BYTES, default: DEFAULT_BUFFERED_BODIES_MAX_BYTES })),
  maxInflectionDepth: Type.Optional(Type.Integer({ minimum: 1, maximum: 10_000, default: DEFAULT_MAX_DEPTH })),
  /** Largest upstream body (decoded) the gateway inflects; unset, no limit: the rewriter streams, so size costs no memory. */
  maxInflectedResponseBytes: Type.Optional(Type.Integer({ minimum: 1_024 })),
  /**
   * An inflected upstream body is held up to this many bytes and then sent whole with
   * its Content-Length, so that invalid JSON is a 502 before anything is sent; a larger
   * one streams, and invalid JSON found later cuts the response.
   */
  inflectedResponseHoldBytes: Type.Optional(Type.Integer({ minimum: 0, maximum: 67_108_864, default: 262_144 })),
  /**
   * Request header names with a character other than letters, digits and `-` (such as
   * `_` or `.`) that are forwarded anyway, by exact name; every other such header is
   * dropped, since CGI-style servers read `x_portier_principal` as `x-portier-principal`.
   */
  allowedUnusualHeaders: Type.Optional(Type.Array(Type.String({ pattern: "^[!#$%&'*+.^_`|~0-9A-Za-z-]+$" }), { default: [] })),
  /** Most object members an inflected request body may have (400 `body_too_wide`). */
  maxInflectedRequestMembers: Type.Optional(Type.Integer({ minimum: 1, default: 10_000 })),
  /** Most object members of an upstream body the gateway inflects (502 `upstream_body_not_inflectable`); unset, no limit. */
  maxInflectedResponseMembers: Type.Optional(Type.Integer({ minimum: 1 })),
  /** Traffic policies of identity's public routes, per client network unless they say otherwise; [] for none. */
  anonymousPolicies: Type.Optional(Type.Array(TrafficPolicies.items, { maxItems: 8, default: DEFAULT_ANONYMOUS_POLICIES })),
  /** Also send X-RateLimit-Limit / -Remaining / -Reset (of the tightest policy) beside RateLimit and RateLimit-Policy. */
  legacyRateLimitHeaders: Type.Optional(Type.Boolean({ default: false })),
  /**
   * Bytes of rate-limit counts this process keeps (the counts without Redis, and the
   * fallback while Redis is lost): a window takes 8 bytes per unit of its limit; the
   * least recently used partition is forgotten beyond.
   */
  trafficCountersMaxBytes: Type.Optional(Type.Integer({ minimum: 1_048_576, default: 67_108_864 })),
  /**
   * The hosts (host[:port], as clients send them in Host, or a trusted proxy in
   * X-Forwarded-Host) the gateway serves; a request for another gets 421
   * `misdirected_request`, so X-Forwarded-Host is always one of these. Unset: any
   * well-formed Host is served and forwarded.
   */
  publicHosts: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 262, pattern: '^[^\\s,]+$' }), { minItems: 1 })),
  /** Largest WebSocket message either side of a WebSocket route may send; a larger one closes the connection (1009). */
  webSocketMaxMessageBytes: Type.Optional(Type.Integer({ minimum: 1_024, maximum: 67_108_864, default: 1_048_576 })),
  /** A WebSocket on which no message passed either way for this long is closed (1001). */
  webSocketIdleSeconds: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: 86_400, default: 300 })),
  /** Serve /healthz and /readyz from the plugin (turn off if the host has its own). */
  observabilityRoutes: Type.Optional(Type.Boolean({ default: true })),
  /**
   * Serve /metrics on this app, to `Authorization: Bearer <metricsToken>` only. Off by
   * default: metrics show auth outcomes, cache tiers and process internals, so they
   * belong on a private listener (the standalone server's GATEWAY_METRICS_PORT), or a
   * host app serves `app.portierGateway.metrics.registry` where it chooses.
   */
  metricsRoute: Type.Optional(Type.Boolean({ default: false })),
  /** The Bearer token /metrics asks for when metricsRoute is on (required then); at least 32 characters of RFC 6750's b64token. */
  metricsToken: Type.Optional(Type.String({ minLength: 32, pattern: B64TOKEN_PATTERN })),
  /**
   * Serve the OpenAPI document at /openapi.json and Swagger UI at /docs. Off by default in
   * the plugin: it registers @fastify/swagger, which a host app may have already (a host
   * can serve gatewayOpenApiDocument() itself); the standalone server turns it on.
   */
  documentationRoutes: Type.Optional(Type.Boolean({ default: false }))
}, { additionalProperties: false })

/** What a host app passes: every option with a default may be left out. */
export type GatewayOptionsInput = Static<typeof GatewayOptionsSchema>

type Optionals = 'upstreamsFile' | 'upstreams' | 'redisUrl' | 'redisClusterNodes' | 'metricsToken' | 'maxInflectedResponseBytes' | 'maxInflectedResponseMembers' | 'publicHosts'
/** The options after validation: defaults filled in. */
export type ResolvedGatewayOptions = Required<Omit<GatewayOptionsInput, Optionals | 'identity' | 'keyCache'>> &
Pick<GatewayOptionsInput, Optionals> & {
  identity: Required<GatewayOptionsInput['identity']>
  keyCache: Required<NonNullable<GatewayOptionsInput['keyCache']>>
}

/** Where the gateway's Redis is, from redisUrl / redisClusterNodes; problems name the option at fault. */
export function redisTargetOf (options: Pick<GatewayOptionsInput, 'redisUrl' | 'redisClusterNodes'>): { target?: RedisTarget, problems: string[] } {
  return parseRedisTarget({ url: options.redisUrl, clusterNodes: options.redisClusterNodes }, { url: 'redisUrl', clusterNodes: 'redisClusterNodes' })
}

/** The public hosts that are not one well-formed host[:port]. */
export function publicHostProblems (hosts: readonly string[] | undefined, name = 'publicHosts'): string[] {
  return (hosts ?? []).flatMap((host, i) => {
    const problem = host === '' ? 'is empty' : hostProblem(host)
    return problem === null ? [] : [`${name}[${i}]: ${host} is not a host[:port] (${problem})`]
  })
}

/** What is wrong with the metrics options together (named as `names` says): /metrics is never served on the app without a credential. */
export function metricsOptionProblems (options: Pick<GatewayOptionsInput, 'metricsRoute' | 'metricsToken'>,
  names: { route: string, token: string } = { route: 'metricsRoute', token: 'metricsToken' }): string[] {
  if (options.metricsRoute === true && options.metricsToken === undefined) {
    return [`${names.route}: needs ${names.token} (at least 32 characters): /metrics is never served on the main listener without a credential`]
  }
  if (options.metricsRoute !== true && options.metricsToken !== undefined) {
    return [`${names.token}: is set but ${names.route} is off, so nothing asks for it: turn ${names.route} on, or leave the token out`]
  }
  return []
}
