import { Type, type Static } from 'typebox'
import { B64TOKEN_PATTERN } from '../common/credentials.js'
import { ConfigError, validateConfig } from '../common/config.js'
import { listenerEnvProperties, listenerLimitsFromEnv, type ListenerTimeouts } from '../common/listener-limits.js'
import { parseRedisTarget, redisEnvProperties } from '../common/redis-config.js'
import { metricsOptionProblems, type GatewayOptionsInput } from './options.js'

/** Loopback: metrics show auth outcomes, cache tiers and process internals; bind wider only on a private network. */
export const DEFAULT_METRICS_HOST = '127.0.0.1'
/** The port Prometheus exporters commonly take for an application's own metrics (OpenTelemetry's exporter too). */
export const DEFAULT_METRICS_PORT = 9464

/**
 * The standalone gateway's environment. IDENTITY_SERVICE_TOKEN, IDENTITY_ISSUER,
 * IDENTITY_AUDIENCE, IDENTITY_EVENTS_CHANNEL, REDIS_URL and REDIS_CLUSTER_NODES have the
 * same names as identity's, so one environment configures both.
 */
export const GatewayEnvSchema = Type.Object({
  GATEWAY_HOST: Type.String({ default: '0.0.0.0', description: 'Interface the gateway listens on.' }),
  GATEWAY_PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 3000, description: 'Port of the gateway: the one base URL clients call.' }),
  GATEWAY_METRICS_HOST: Type.String({ default: DEFAULT_METRICS_HOST, description: 'Interface of the private metrics listener (GET /metrics, Prometheus text); keep it private.' }),
  GATEWAY_METRICS_PORT: Type.Integer({ minimum: 0, maximum: 65535, default: DEFAULT_METRICS_PORT, description: 'Port of the private metrics listener; 0: no metrics listener.' }),
  GATEWAY_METRICS_ON_MAIN_LISTENER: Type.Boolean({ default: false, description: 'Serve /metrics on the main listener too, to `Authorization: Bearer $GATEWAY_METRICS_TOKEN` only.' }),
  GATEWAY_METRICS_TOKEN: Type.Optional(Type.String({ minLength: 32, pattern: B64TOKEN_PATTERN, description: 'The Bearer token of /metrics on the main listener; required with GATEWAY_METRICS_ON_MAIN_LISTENER; at least 32 characters of A-Z a-z 0-9 - . _ ~ + / (openssl rand -hex 32).' })),
  GATEWAY_UPSTREAMS_FILE: Type.String({ minLength: 1, default: 'gateway/upstreams.default.yaml', description: 'Upstreams config (YAML or JSON); see "Adding an upstream".' }),
  GATEWAY_WATCH_UPSTREAMS: Type.Boolean({ default: true, description: 'Reload the upstreams file when it changes (SIGHUP always reloads).' }),
  IDENTITY_PUBLIC_URL: Type.String({ format: 'uri', pattern: '^https?://', default: 'http://127.0.0.1:3001', description: "Identity's public listener: login, refresh, logout, JWKS." }),
  IDENTITY_INTERNAL_URL: Type.String({ format: 'uri', pattern: '^https?://', default: 'http://127.0.0.1:3002', description: "Identity's admin/internal listener, for key verification and the revocation feed." }),
  IDENTITY_SERVICE_TOKEN: Type.String({ minLength: 32, description: "Identity's service credential for /internal/*. Required." }),
  IDENTITY_ISSUER: Type.String({ minLength: 1, default: 'portier-identity', description: 'Expected `iss` of access tokens.' }),
  IDENTITY_AUDIENCE: Type.String({ minLength: 1, default: 'portier-gateway', description: 'Expected `aud` of access tokens.' }),
  IDENTITY_EVENTS_CHANNEL: Type.String({ minLength: 1, default: 'portier:events', description: 'Redis channel of identity\'s invalidation events.' }),
  ...redisEnvProperties('the L2 key cache, shared revocations and events', 'L1 only, events in process.'),
  GATEWAY_IDENTITY_TIMEOUT_MS: Type.Integer({ minimum: 100, maximum: 60_000, default: 2_000, description: 'Longest wait for identity on a key-cache miss (and for the JWKS and revocation feed), from the call to the answer\'s end, queueing for a connection included.' }),
  GATEWAY_KEY_CACHE_L1_MAX_ENTRIES: Type.Integer({ minimum: 1, default: 10_000, description: 'Verified API keys kept in process (LRU).' }),
  GATEWAY_KEY_CACHE_L1_TTL_SECONDS: Type.Number({ exclusiveMinimum: 0, maximum: 3_600, default: 30, description: 'Life of an L1 entry: bounds a missed eviction while Redis is down.' }),
  GATEWAY_KEY_CACHE_L2_TTL_SECONDS: Type.Number({ exclusiveMinimum: 0, maximum: 86_400, default: 300, description: 'Life of a Redis (L2) entry; never beyond the key\'s expiry.' }),
  GATEWAY_NEGATIVE_CACHE_TTL_SECONDS: Type.Number({ exclusiveMinimum: 0, maximum: 300, default: 5, description: 'How long a refused key is refused without asking identity again.' }),
  GATEWAY_TOKEN_CACHE_MAX_ENTRIES: Type.Integer({ minimum: 1, default: 10_000, description: 'Verified access tokens remembered until they expire (LRU).' }),
  GATEWAY_JWKS_COOLDOWN_SECONDS: Type.Number({ minimum: 0, maximum: 3_600, default: 30, description: 'Least time between JWKS fetches caused by unknown `kid`s.' }),
  GATEWAY_REVOCATION_SYNC_SECONDS: Type.Number({ exclusiveMinimum: 0, maximum: 3_600, default: 30, description: 'How often revoked sessions are re-read from Redis and identity (a net under lost events).' }),
  GATEWAY_BODY_LIMIT_BYTES: Type.Integer({ minimum: 1_024, default: 1_048_576, description: 'Largest accepted request body of an upstream route (1 MiB); an upstream may set its own.' }),
  GATEWAY_IDENTITY_BODY_LIMIT_BYTES: Type.Integer({ minimum: 1_024, maximum: 1_048_576, default: 8_192, description: 'Largest accepted request body of identity\'s routes (login, refresh, logout), which take no credential (8 KiB).' }),
  ...listenerEnvProperties('GATEWAY', 'the gateway'),
  GATEWAY_MAX_INFLECTION_DEPTH: Type.Integer({ minimum: 1, maximum: 10_000, default: 512, description: 'Deepest JSON nesting the gateway inflects.' }),
  GATEWAY_MAX_INFLECTED_RESPONSE_BYTES: Type.Integer({ minimum: 1_024, default: 16_777_216, description: 'Largest upstream JSON body the gateway inflects (16 MiB); larger is a 502.' }),
  GATEWAY_ALLOWED_UNUSUAL_HEADERS: Type.Optional(Type.String({ description: 'Request header names with a character other than letters, digits and `-` (e.g. `x_legacy_id`) to forward anyway: a comma list of exact names. Unset: every such header is dropped.' })),
  GATEWAY_MAX_INFLECTED_REQUEST_MEMBERS: Type.Integer({ minimum: 1, default: 10_000, description: 'Most object members (all depths) of a request body the gateway inflects; more is a 400.' }),
  GATEWAY_MAX_INFLECTED_RESPONSE_MEMBERS: Type.Integer({ minimum: 1, default: 1_000_000, description: 'Most object members (all depths) of an upstream JSON body the gateway inflects; more is a 502.' }),
  GATEWAY_TRUST_PROXY: Type.String({ default: 'false', description: 'Whose X-Forwarded-* to trust (load balancers in front): false, true, or a comma list of IPs/CIDRs.' }),
  GATEWAY_SHUTDOWN_GRACE_SECONDS: Type.Number({ minimum: 0, maximum: 300, default: 10, description: 'On SIGTERM, how long in-flight requests get to finish.' }),
  LOG_LEVEL: Type.Enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const, { default: 'info', description: 'pino log level.' })
}, { additionalProperties: true })

type GatewayEnv = Static<typeof GatewayEnvSchema>

export interface GatewayServerConfig {
  host: string
  port: number
  /** The private metrics listener, or null when GATEWAY_METRICS_PORT is 0. */
  metrics: { host: string, port: number } | null
  trustProxy: boolean | string
  shutdownGraceMs: number
  logLevel: string
  /** The listener's header, request and keep-alive timeouts; default DEFAULT_LISTENER_TIMEOUTS. */
  timeouts?: ListenerTimeouts
  plugin: GatewayOptionsInput
}

/** Reads and validates the standalone gateway's environment; throws a ConfigError naming every bad variable. */
export function loadGatewayConfig (env: Record<string, string | undefined> = process.env): Readonly<GatewayServerConfig> {
  const e = validateConfig<GatewayEnv>(GatewayEnvSchema, env, 'gateway environment')
  const redis = parseRedisTarget({ url: e.REDIS_URL, clusterNodes: e.REDIS_CLUSTER_NODES })
  const metrics = { metricsRoute: e.GATEWAY_METRICS_ON_MAIN_LISTENER, ...(e.GATEWAY_METRICS_TOKEN !== undefined ? { metricsToken: e.GATEWAY_METRICS_TOKEN } : {}) }
  const listeners = listenerLimitsFromEnv('GATEWAY', e)
  const problems = [
    ...redis.problems,
    ...listeners.problems,
    ...metricsOptionProblems(metrics, { route: 'GATEWAY_METRICS_ON_MAIN_LISTENER', token: 'GATEWAY_METRICS_TOKEN' })
  ]
  if (problems.length > 0) throw new ConfigError('gateway environment', problems)
  return Object.freeze({
    host: e.GATEWAY_HOST,
    port: e.GATEWAY_PORT,
    metrics: e.GATEWAY_METRICS_PORT === 0 ? null : { host: e.GATEWAY_METRICS_HOST, port: e.GATEWAY_METRICS_PORT },
    trustProxy: e.GATEWAY_TRUST_PROXY === 'true' ? true : e.GATEWAY_TRUST_PROXY === 'false' ? false : e.GATEWAY_TRUST_PROXY,
    shutdownGraceMs: e.GATEWAY_SHUTDOWN_GRACE_SECONDS * 1000,
    logLevel: e.LOG_LEVEL,
    timeouts: listeners.timeouts,
    plugin: {
      upstreamsFile: e.GATEWAY_UPSTREAMS_FILE,
      watchUpstreamsFile: e.GATEWAY_WATCH_UPSTREAMS,
      identity: {
        publicUrl: e.IDENTITY_PUBLIC_URL,
        internalUrl: e.IDENTITY_INTERNAL_URL,
        serviceToken: e.IDENTITY_SERVICE_TOKEN,
        issuer: e.IDENTITY_ISSUER,
        audience: e.IDENTITY_AUDIENCE,
        timeoutMs: e.GATEWAY_IDENTITY_TIMEOUT_MS
      },
      ...(e.REDIS_URL !== undefined ? { redisUrl: e.REDIS_URL } : {}),
      ...(e.REDIS_CLUSTER_NODES !== undefined ? { redisClusterNodes: e.REDIS_CLUSTER_NODES.split(',').map((node) => node.trim()) } : {}),
      eventsChannel: e.IDENTITY_EVENTS_CHANNEL,
      keyCache: {
        l1MaxEntries: e.GATEWAY_KEY_CACHE_L1_MAX_ENTRIES,
        l1TtlSeconds: e.GATEWAY_KEY_CACHE_L1_TTL_SECONDS,
        l2TtlSeconds: e.GATEWAY_KEY_CACHE_L2_TTL_SECONDS,
        negativeTtlSeconds: e.GATEWAY_NEGATIVE_CACHE_TTL_SECONDS
      },
      tokenCacheMaxEntries: e.GATEWAY_TOKEN_CACHE_MAX_ENTRIES,
      jwksCooldownSeconds: e.GATEWAY_JWKS_COOLDOWN_SECONDS,
      revocationSyncSeconds: e.GATEWAY_REVOCATION_SYNC_SECONDS,
      bodyLimitBytes: e.GATEWAY_BODY_LIMIT_BYTES,
      identityBodyLimitBytes: e.GATEWAY_IDENTITY_BODY_LIMIT_BYTES,
      bufferedBodiesMaxBytes: listeners.bufferedBodiesMaxBytes,
      maxInflectionDepth: e.GATEWAY_MAX_INFLECTION_DEPTH,
      maxInflectedResponseBytes: e.GATEWAY_MAX_INFLECTED_RESPONSE_BYTES,
      maxInflectedRequestMembers: e.GATEWAY_MAX_INFLECTED_REQUEST_MEMBERS,
      maxInflectedResponseMembers: e.GATEWAY_MAX_INFLECTED_RESPONSE_MEMBERS,
      ...(e.GATEWAY_ALLOWED_UNUSUAL_HEADERS !== undefined
        ? { allowedUnusualHeaders: e.GATEWAY_ALLOWED_UNUSUAL_HEADERS.split(',').map((name) => name.trim()).filter((name) => name !== '') }
        : {}),
      ...metrics
    }
  })
}
