import { availableParallelism } from 'node:os'
import { Type, type Static, type TSchema } from 'typebox'
import { ConfigError, validateConfig, LOG_FORMAT_PROPERTY, LOG_LEVEL_PROPERTY, parseTrustProxy } from '../common/config.js'
import type { LogFormat } from '../common/log-destination.js'
import { deepFreeze } from '../common/deep-freeze.js'
import { listenerEnvProperties, listenerLimitsFromEnv, type ListenerTimeouts } from '../common/listener-limits.js'
import type { UnreadBodyLimits } from '../common/unread-body.js'
import { parseRedisTarget, redisEnvProperties } from '../common/redis-config.js'
import { tracingConfigOf, tracingEnvProperties, type TracingConfig } from '../common/tracing/config.js'
import { GatewayOptionsSchema, metricsOptionProblems, publicHostProblems, type GatewayOptionsInput } from './options.js'
import { addressListProblems } from './verify/address-list.js'

/** Loopback: metrics show auth outcomes, cache tiers and process internals; bind wider only on a private network. */
export const DEFAULT_METRICS_HOST = '127.0.0.1'
/** The port Prometheus exporters commonly take for an application's own metrics (OpenTelemetry's exporter too). */
export const DEFAULT_METRICS_PORT = 9464

type Options = typeof GatewayOptionsSchema.properties
/** The options that group others (`identity.timeoutMs`): a variable sets one member. */
type Group = 'identity' | 'keyCache'
type Members<G extends Group> = Options[G]['properties']
/** A plugin option a variable can set: `name`, or `group.member`. */
type OptionPath = Exclude<keyof Options, Group> | { [G in Group]: `${G}.${keyof Members<G> & string}` }[Group]
type OptionSchema<P extends OptionPath> = P extends `${infer G extends Group}.${infer M}` ? Members<G>[M & keyof Members<G>] : Options[P & keyof Options]

/** Loopback only: the verify API answers the proxies on this host unless told otherwise. */
const LOOPBACK_CIDRS = '127.0.0.1/32,::1/128'

/** Marks a variable's schema with the plugin option it sets: what loadGatewayConfig builds the options from. */
export const SETS_OPTION = 'x-gateway-option'

function optionSchema (path: string): TSchema {
  const [name, member] = path.split('.') as [string, string | undefined]
  const option = (GatewayOptionsSchema.properties as Record<string, TSchema & { properties?: Record<string, TSchema> }>)[name]
  const schema = member === undefined ? option : option?.properties?.[member]
  if (schema === undefined) throw new Error(`no gateway option ${path}`)
  return schema
}

/**
 * The variable that sets plugin option `path`: the option's own schema (type, bounds,
 * default) with the variable's description, so that the two can never differ.
 * `serverDefault` is for the few options the standalone server defaults otherwise, or
 * at all: the ones the plugin requires or leaves off for a host app.
 */
function fromOption<P extends OptionPath> (path: P, description: string, serverDefault?: Static<OptionSchema<P>>) {
  return Type.Unsafe<Static<OptionSchema<P>>>({
    ...optionSchema(path),
    description,
    ...(serverDefault !== undefined ? { default: serverDefault } : {}),
    [SETS_OPTION]: path
  })
}

/**
 * The standalone gateway's environment. IDENTITY_SERVICE_TOKEN, IDENTITY_ISSUER,
 * IDENTITY_AUDIENCE, IDENTITY_EVENTS_CHANNEL, REDIS_URL and REDIS_CLUSTER_NODES have the
 * same names as identity's, so one environment configures both. The variables that set
 * a plugin option take its schema (gateway/options.ts); the others are the server's.
 */
export const GatewayEnvSchema = Type.Object({
  GATEWAY_HOST: Type.String({ default: '0.0.0.0', description: 'Interface the gateway listens on.' }),
  GATEWAY_PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 3000, description: 'Port of the gateway: the one base URL clients call.' }),
  // A string: `auto` or a count, read by workersOf below so that the problem names the value given.
  GATEWAY_WORKERS: Type.String({ default: '1', description: 'Processes serving GATEWAY_PORT: `1` (one process, no cluster), a larger count (node:cluster workers under a supervising primary), or `auto` (one per core: os.availableParallelism()).' }),
  GATEWAY_METRICS_HOST: Type.String({ default: DEFAULT_METRICS_HOST, description: 'Interface of the private metrics listener (GET /metrics, Prometheus text); keep it private.' }),
  GATEWAY_METRICS_PORT: Type.Integer({ minimum: 0, maximum: 65535, default: DEFAULT_METRICS_PORT, description: 'Port of the private metrics listener; 0: no metrics listener.' }),
  GATEWAY_METRICS_ON_MAIN_LISTENER: fromOption('metricsRoute', 'Serve /metrics on the main listener too, to `Authorization: Bearer $GATEWAY_METRICS_TOKEN` only.'),
  GATEWAY_METRICS_TOKEN: Type.Optional(fromOption('metricsToken', 'The Bearer token of /metrics on the main listener; required with GATEWAY_METRICS_ON_MAIN_LISTENER; at least 32 characters of A-Z a-z 0-9 - . _ ~ + / (openssl rand -hex 32).')),
  GATEWAY_UPSTREAMS_FILE: fromOption('upstreamsFile', 'Upstreams config (YAML or JSON); see "Adding an upstream".', 'gateway/upstreams.default.yaml'),
  GATEWAY_WATCH_UPSTREAMS: fromOption('watchUpstreamsFile', 'Reload the upstreams file when it changes (SIGHUP always reloads).', true),
  IDENTITY_PUBLIC_URL: fromOption('identity.publicUrl', "Identity's public listener: login, refresh, logout, JWKS, self-service (/me).", 'http://127.0.0.1:3001'),
  IDENTITY_INTERNAL_URL: fromOption('identity.internalUrl', "Identity's admin/internal listener, for key verification and the revocation feed.", 'http://127.0.0.1:3002'),
  GATEWAY_CONSOLE_URL: Type.Optional(fromOption('consoleUrl', 'The back-office console (CONSOLE_HOST:CONSOLE_PORT): /console and /console/* are forwarded to it, cookies and form posts as sent, without a credential check by the gateway (the console checks its own session). Unset: no console routes.')),
  IDENTITY_SERVICE_TOKEN: fromOption('identity.serviceToken', "Identity's service credential for /internal/*. Required."),
  IDENTITY_ISSUER: fromOption('identity.issuer', 'Expected `iss` of access tokens.'),
  IDENTITY_AUDIENCE: fromOption('identity.audience', 'Expected `aud` of access tokens.'),
  IDENTITY_EVENTS_CHANNEL: fromOption('eventsChannel', 'Redis channel of identity\'s invalidation events.'),
  ...redisEnvProperties('the L2 key cache, shared revocations and events', 'L1 only, events in process.'),
  GATEWAY_IDENTITY_TIMEOUT_MS: fromOption('identity.timeoutMs', 'Longest wait for identity on a key-cache miss (and for the JWKS and revocation feed), from the call to the answer\'s end, queueing for a connection included.'),
  GATEWAY_KEY_CACHE_L1_MAX_ENTRIES: fromOption('keyCache.l1MaxEntries', 'Verified API keys kept in process (LRU).'),
  GATEWAY_KEY_CACHE_L1_TTL_SECONDS: fromOption('keyCache.l1TtlSeconds', 'Life of an L1 entry: bounds a missed eviction while Redis is down.'),
  GATEWAY_KEY_CACHE_L2_TTL_SECONDS: fromOption('keyCache.l2TtlSeconds', 'Life of a Redis (L2) entry; never beyond the key\'s expiry.'),
  GATEWAY_NEGATIVE_CACHE_TTL_SECONDS: fromOption('keyCache.negativeTtlSeconds', 'How long a refused key is refused without asking identity again.'),
  GATEWAY_TOKEN_CACHE_MAX_ENTRIES: fromOption('tokenCacheMaxEntries', 'Verified access tokens remembered until they expire (LRU).'),
  GATEWAY_JWKS_COOLDOWN_SECONDS: fromOption('jwksCooldownSeconds', 'Least time between JWKS fetches caused by unknown `kid`s.'),
  GATEWAY_REVOCATION_SYNC_SECONDS: fromOption('revocationSyncSeconds', 'How often revoked sessions are re-read from Redis and identity (a net under lost events).'),
  GATEWAY_KEY_USAGE_FLUSH_SECONDS: fromOption('keyUsageFlushSeconds', 'How often the API key uses this gateway counted are reported to identity (use counts, last use); a crash loses at most this much.'),
  GATEWAY_KEY_USAGE_MAX_KEYS: fromOption('keyUsageMaxKeys', 'Most keys whose uses the gateway holds until they are reported; uses of a key beyond are not counted (logged, and counted in a metric).'),
  GATEWAY_BODY_LIMIT_BYTES: fromOption('bodyLimitBytes', 'Largest accepted request body of an upstream route (1 MiB); an upstream may set its own.'),
  GATEWAY_IDENTITY_BODY_LIMIT_BYTES: fromOption('identityBodyLimitBytes', 'Largest accepted request body of identity\'s routes (login, refresh, logout, self-service), which the gateway forwards without its own credential check (8 KiB).'),
  // GATEWAY_BUFFERED_BODIES_MAX_BYTES among them: the same bounds as bufferedBodiesMaxBytes (common/listener-limits.ts).
  ...listenerEnvProperties('GATEWAY', 'the gateway'),
  GATEWAY_MAX_INFLECTION_DEPTH: fromOption('maxInflectionDepth', 'Deepest JSON nesting the gateway inflects.'),
  GATEWAY_MAX_INFLECTED_RESPONSE_BYTES: Type.Optional(fromOption('maxInflectedResponseBytes', 'Largest upstream JSON body (decoded) the gateway inflects; larger is a 502, or a cut response once streaming. Unset: no limit.')),
  GATEWAY_INFLECTED_RESPONSE_HOLD_BYTES: fromOption('inflectedResponseHoldBytes', 'An inflected upstream body up to this size (256 KiB) is held and sent whole, so invalid JSON is a 502; a larger one streams and invalid JSON cuts it.'),
  // A comma list here, a list in the options: read below, its names checked when the plugin registers.
  GATEWAY_ALLOWED_UNUSUAL_HEADERS: Type.Optional(Type.String({ description: 'Request header names with a character other than letters, digits and `-` (e.g. `x_legacy_id`) to forward anyway: a comma list of exact names. Unset: every such header is dropped.' })),
  GATEWAY_MAX_INFLECTED_REQUEST_MEMBERS: fromOption('maxInflectedRequestMembers', 'Most object members (all depths) of a request body the gateway inflects; more is a 400.'),
  GATEWAY_MAX_INFLECTED_RESPONSE_MEMBERS: Type.Optional(fromOption('maxInflectedResponseMembers', 'Most object members (all depths) of an upstream JSON body the gateway inflects; more is a 502, or a cut response once streaming. Unset: no limit.')),
  // JSON here, a list in the options: parsed below, its policies checked when the plugin registers.
  GATEWAY_ANONYMOUS_POLICIES: Type.Optional(Type.String({ description: 'Traffic policies of identity\'s public routes (login, refresh, logout, JWKS, self-service) as a JSON array, e.g. `[{"name":"anonymous","kind":"rate","limit":600,"window_seconds":60,"partition":"ip"}]` (the default); `[]` for none.' })),
  GATEWAY_LEGACY_RATELIMIT_HEADERS: fromOption('legacyRateLimitHeaders', 'Also send X-RateLimit-Limit / -Remaining / -Reset (the tightest policy) beside RateLimit-Policy and RateLimit.'),
  GATEWAY_TRAFFIC_COUNTERS_MAX_BYTES: fromOption('trafficCountersMaxBytes', 'Bytes of rate-limit counts kept in process (without Redis, and while Redis is lost); the least recently used partition is forgotten beyond.'),
  // A comma list here, a list in the options: read below.
  GATEWAY_PUBLIC_HOSTS: Type.Optional(Type.String({ description: 'The hosts the gateway serves, a comma list of host[:port] as clients send them (e.g. `api.example.com,api.example.com:8443`); a request for another Host (or X-Forwarded-Host from a trusted proxy) gets 421 misdirected_request, so the X-Forwarded-Host upstreams receive is always one of them. Unset: any well-formed Host is served.' })),
  GATEWAY_WEBSOCKET_MAX_MESSAGE_BYTES: fromOption('webSocketMaxMessageBytes', 'Largest message either side of a WebSocket route may send (1 MiB); a larger one closes the connection (1009).'),
  GATEWAY_WEBSOCKET_IDLE_SECONDS: fromOption('webSocketIdleSeconds', 'A WebSocket on which no message passed either way for this long is closed (1001).'),
  GATEWAY_VERIFY_LISTENER: Type.Optional(Type.String({ minLength: 1, description: 'host:port of the verify API\'s own listener (docs/verify-api.md), where nginx, Traefik, Caddy and Envoy ask whether a request may pass. Unset: no verify API.' })),
  GATEWAY_VERIFY_CLIENTS: Type.String({ default: LOOPBACK_CIDRS, description: 'Who may ask the verify API in JSON (POST /v1/verify): a comma list of IPs/CIDRs; anyone else gets 403.' }),
  GATEWAY_VERIFY_PROXIES: Type.String({ default: LOOPBACK_CIDRS, description: 'The proxies that may ask the verify API in their own shapes (nginx, forward auth, Envoy), whose X-Original-* / X-Forwarded-* headers are believed: a comma list of IPs/CIDRs; anyone else gets 403 there.' }),
  GATEWAY_VERIFY_ALLOW_MAX_AGE_SECONDS: Type.Integer({ minimum: 0, maximum: 1, default: 0, description: 'How long a proxy may keep a verify allow that took no rate limit or quota (`Cache-Control: private, max-age`); 0: every answer is `no-store`. A kept allow outlives a revocation by up to this, hence at most 1.' }),
  GATEWAY_TRUST_PROXY: Type.String({ default: 'false', description: 'Whose X-Forwarded-* to trust (load balancers in front): false, true, or a comma list of IPs/CIDRs.' }),
  GATEWAY_SHUTDOWN_GRACE_SECONDS: Type.Number({ minimum: 0, maximum: 300, default: 10, description: 'On SIGTERM, how long in-flight requests get to finish.' }),
  ...tracingEnvProperties('portier-gateway'),
  LOG_LEVEL: LOG_LEVEL_PROPERTY,
  LOG_FORMAT: LOG_FORMAT_PROPERTY
}, { additionalProperties: true })

type GatewayEnv = Static<typeof GatewayEnvSchema>

export interface GatewayServerConfig {
  host: string
  port: number
  /** Processes serving `port` (GATEWAY_WORKERS; 1 when absent: one process, no cluster). Only the standalone server reads it. */
  workers?: number
  /** The private metrics listener, or null when GATEWAY_METRICS_PORT is 0. */
  metrics: { host: string, port: number } | null
  /** The verify API's listener (GATEWAY_VERIFY_*), or null when GATEWAY_VERIFY_LISTENER is unset. */
  verify?: VerifyListenerConfig | null
  trustProxy: boolean | string
  shutdownGraceMs: number
  logLevel: string
  /** LOG_FORMAT: how stdout's lines are written (json unless set). */
  logFormat?: LogFormat
  /** The listener's header, request and keep-alive timeouts; default DEFAULT_LISTENER_TIMEOUTS. */
  timeouts?: ListenerTimeouts
  /** What the listener does with a request body it answers without reading; default DEFAULT_UNREAD_BODY_LIMITS. */
  unreadBodies?: UnreadBodyLimits
  plugin: GatewayOptionsInput
  /** OpenTelemetry tracing (OTEL_*); absent or null: off. */
  tracing?: TracingConfig | null
}

/** Reads and validates the standalone gateway's environment, deep-frozen; throws a ConfigError naming every bad variable. */
export function loadGatewayConfig (env: Record<string, string | undefined> = process.env): Readonly<GatewayServerConfig & { workers: number }> {
  const e = validateConfig<GatewayEnv>(GatewayEnvSchema, env, 'gateway environment')
  const redis = parseRedisTarget({ url: e.REDIS_URL, clusterNodes: e.REDIS_CLUSTER_NODES })
  const metrics = { metricsRoute: e.GATEWAY_METRICS_ON_MAIN_LISTENER, ...(e.GATEWAY_METRICS_TOKEN !== undefined ? { metricsToken: e.GATEWAY_METRICS_TOKEN } : {}) }
  const listeners = listenerLimitsFromEnv('GATEWAY', e)
  const workers = workersOf(e.GATEWAY_WORKERS)
  const anonymous = anonymousPoliciesOf(e.GATEWAY_ANONYMOUS_POLICIES)
  const publicHosts = e.GATEWAY_PUBLIC_HOSTS === undefined ? undefined : listOf(e.GATEWAY_PUBLIC_HOSTS)
  const verify = verifyListenerOf(e)
  const tracing = tracingConfigOf(e)
  const problems = [
    ...tracing.problems,
    ...(typeof verify === 'object' && verify !== null && 'problems' in verify ? verify.problems : []),
    ...(typeof anonymous === 'string' ? [anonymous] : []),
    ...redis.problems,
    ...listeners.problems,
    ...metricsOptionProblems(metrics, { route: 'GATEWAY_METRICS_ON_MAIN_LISTENER', token: 'GATEWAY_METRICS_TOKEN' }),
    ...(publicHosts?.length === 0 ? ['GATEWAY_PUBLIC_HOSTS: must name at least one host[:port] (unset it to serve any Host)'] : publicHostProblems(publicHosts, 'GATEWAY_PUBLIC_HOSTS')),
    ...(typeof workers === 'string' ? [workers] : []),
    // Whichever worker took the scrape would answer with its own counts only: the private listener sums them all.
    ...(typeof workers === 'number' && workers > 1 && e.GATEWAY_METRICS_ON_MAIN_LISTENER
      ? ['GATEWAY_METRICS_ON_MAIN_LISTENER: must be false with more than one worker (GATEWAY_WORKERS); the private metrics listener serves the sum of all workers']
      : [])
  ]
  if (problems.length > 0) throw new ConfigError('gateway environment', problems)
  return deepFreeze({
    host: e.GATEWAY_HOST,
    port: e.GATEWAY_PORT,
    workers: workers as number,
    metrics: e.GATEWAY_METRICS_PORT === 0 ? null : { host: e.GATEWAY_METRICS_HOST, port: e.GATEWAY_METRICS_PORT },
    verify: verify as VerifyListenerConfig | null,
    trustProxy: parseTrustProxy(e.GATEWAY_TRUST_PROXY),
    shutdownGraceMs: e.GATEWAY_SHUTDOWN_GRACE_SECONDS * 1000,
    logLevel: e.LOG_LEVEL,
    logFormat: e.LOG_FORMAT,
    timeouts: listeners.timeouts,
    unreadBodies: listeners.unreadBodies,
    tracing: tracing.config,
    plugin: {
      ...optionsFromVariables(e),
      ...(e.REDIS_URL !== undefined ? { redisUrl: e.REDIS_URL } : {}),
      ...(e.REDIS_CLUSTER_NODES !== undefined ? { redisClusterNodes: e.REDIS_CLUSTER_NODES.split(',').map((node) => node.trim()) } : {}),
      bufferedBodiesMaxBytes: listeners.bufferedBodiesMaxBytes,
      ...(anonymous !== undefined ? { anonymousPolicies: anonymous as NonNullable<GatewayOptionsInput['anonymousPolicies']> } : {}),
      ...(publicHosts !== undefined ? { publicHosts } : {}),
      ...(e.GATEWAY_ALLOWED_UNUSUAL_HEADERS !== undefined
        ? { allowedUnusualHeaders: listOf(e.GATEWAY_ALLOWED_UNUSUAL_HEADERS) }
        : {})
    }
  })
}

export interface VerifyListenerConfig {
  host: string
  port: number
  clients: string[]
  proxies: string[]
  allowMaxAgeSeconds: number
}

/** GATEWAY_VERIFY_*: the listener, or null when off, or what is wrong with them. */
function verifyListenerOf (e: GatewayEnv): VerifyListenerConfig | null | { problems: string[] } {
  if (e.GATEWAY_VERIFY_LISTENER === undefined) return null
  const listener = /^(?:\[([0-9A-Fa-f:.]+)\]|([^:\s]+)):([0-9]{1,5})$/.exec(e.GATEWAY_VERIFY_LISTENER)
  const port = Number(listener?.[3])
  const clients = listOf(e.GATEWAY_VERIFY_CLIENTS)
  const proxies = listOf(e.GATEWAY_VERIFY_PROXIES)
  const problems = [
    ...(listener === null || port > 65535 ? [`GATEWAY_VERIFY_LISTENER: must be host:port (e.g. 127.0.0.1:3010, [::1]:3010), not ${JSON.stringify(e.GATEWAY_VERIFY_LISTENER)}`] : []),
    ...addressListProblems(clients).map((entry) => `GATEWAY_VERIFY_CLIENTS: ${JSON.stringify(entry)} is not an IP or CIDR`),
    ...addressListProblems(proxies).map((entry) => `GATEWAY_VERIFY_PROXIES: ${JSON.stringify(entry)} is not an IP or CIDR`)
  ]
  if (problems.length > 0 || listener === null) return { problems }
  return { host: listener[1] ?? listener[2] as string, port, clients, proxies, allowMaxAgeSeconds: e.GATEWAY_VERIFY_ALLOW_MAX_AGE_SECONDS }
}

/** A comma list's items, trimmed, without empty ones. */
function listOf (value: string): string[] {
  return value.split(',').map((item) => item.trim()).filter((item) => item !== '')
}

/** GATEWAY_ANONYMOUS_POLICIES as a list (checked against the policy schema when the plugin registers), or the problem. */
function anonymousPoliciesOf (value: string | undefined): unknown[] | string | undefined {
  if (value === undefined) return undefined
  try {
    const parsed: unknown = JSON.parse(value)
    if (Array.isArray(parsed)) return parsed
  } catch {}
  return 'GATEWAY_ANONYMOUS_POLICIES: must be a JSON array of traffic policies'
}

/** GATEWAY_WORKERS as a count, or the problem naming the value given. */
function workersOf (value: string): number | string {
  if (value === 'auto') return availableParallelism()
  const count = /^[0-9]+$/.test(value) ? Number(value) : Number.NaN
  return Number.isSafeInteger(count) && count >= 1 ? count : `GATEWAY_WORKERS: must be a positive integer or auto, not ${JSON.stringify(value)}`
}

/** The plugin options the variables marked by fromOption set, from their validated values. */
function optionsFromVariables (env: Record<string, unknown>): GatewayOptionsInput {
  const options: Record<string, unknown> = {}
  for (const [name, variable] of Object.entries(GatewayEnvSchema.properties)) {
    const path = (variable as { [SETS_OPTION]?: string })[SETS_OPTION]
    const value = env[name]
    if (path === undefined || value === undefined) continue
    const [option, member] = path.split('.') as [string, string | undefined]
    options[option] = member === undefined ? value : { ...(options[option] as object | undefined), [member]: value }
  }
  return options as GatewayOptionsInput
}
