import { Type, type Static } from 'typebox'
import { ACCESS_TOKEN_ALGORITHMS, type AccessTokenAlgorithm } from '../common/access-token-profile.js'
import { ConfigError, validateConfig, LOG_FORMAT_PROPERTY, LOG_LEVEL_PROPERTY, parseTrustProxy } from '../common/config.js'
import type { LogFormat } from '../common/log-destination.js'
import { deepFreeze } from '../common/deep-freeze.js'
import { listenerEnvProperties, listenerLimitsFromEnv, type ListenerTimeouts } from '../common/listener-limits.js'
import type { UnreadBodyLimits } from '../common/unread-body.js'
import { parseRedisTarget, redisEnvProperties, type RedisTarget } from '../common/redis-config.js'
import { tracingConfigOf, tracingEnvProperties, type TracingConfig } from '../common/tracing/config.js'

/**
 * Identity configuration: the one schema, validated once at start. Every field is an
 * environment variable; docs/configuration.md's table is checked against this schema.
 */
export const IdentityEnvSchema = Type.Object({
  IDENTITY_HOST: Type.String({ default: '0.0.0.0', description: 'Interface of the public listener (login, refresh, logout, JWKS, self-service under /me).' }),
  IDENTITY_PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 3001, description: 'Port of the public listener.' }),
  IDENTITY_ADMIN_HOST: Type.String({ default: '127.0.0.1', description: 'Interface of the admin/internal listener; keep it private.' }),
  IDENTITY_ADMIN_PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 3002, description: 'Port of the admin/internal listener.' }),
  IDENTITY_DATABASE_PATH: Type.String({ minLength: 1, default: './data/identity.db', description: 'SQLite file (WAL mode); identity and npm start create it with its folder when missing; the CLI refuses a path that holds no Portier database.' }),
  IDENTITY_ADMIN_TOKEN: Type.String({ minLength: 32, description: 'Credential for /admin/* (Authorization: Bearer). Required; at least 32 characters.' }),
  IDENTITY_SERVICE_TOKEN: Type.String({ minLength: 32, description: 'Credential gateways use for /internal/*. Required; at least 32 characters.' }),
  ...redisEnvProperties('invalidation events', 'events stay in process.'),
  IDENTITY_EVENTS_CHANNEL: Type.String({ minLength: 1, default: 'portier:events', description: 'Redis pub/sub channel for invalidation events.' }),
  IDENTITY_ISSUER: Type.String({ minLength: 1, default: 'portier-identity', description: 'The `iss` of access tokens.' }),
  IDENTITY_AUDIENCE: Type.String({ minLength: 1, default: 'portier-gateway', description: 'The `aud` of access tokens.' }),
  IDENTITY_SIGNING_ALG: Type.Enum(ACCESS_TOKEN_ALGORITHMS, { default: 'EdDSA', description: 'Algorithm of new signing keys (each key keeps its own).' }),
  IDENTITY_SIGNING_KEY_ENCRYPTION_KEY: Type.Optional(Type.String({ minLength: 32, description: 'Encrypts signing private keys at rest (AES-256-GCM, key derived by HKDF). Required unless IDENTITY_SIGNING_KEY_ENCRYPTION is off; set it from a Secret (openssl rand -hex 32), the same in every identity process and the CLI.' })),
  IDENTITY_SIGNING_KEY_ENCRYPTION_KEY_PREVIOUS: Type.Optional(Type.String({ minLength: 32, description: 'The former IDENTITY_SIGNING_KEY_ENCRYPTION_KEY while changing it: keys it encrypted are re-encrypted with the new one at start. Unset once every process runs the new key.' })),
  IDENTITY_SIGNING_KEY_ENCRYPTION: Type.Enum(['on', 'off'] as const, { default: 'on', description: 'on: identity refuses to start without IDENTITY_SIGNING_KEY_ENCRYPTION_KEY, so signing private keys are never stored in clear; off: stored unencrypted (tests, throwaway setups only).' }),
  IDENTITY_REFRESH_IDLE_SECONDS: Type.Integer({ minimum: 60, default: 1_209_600, description: 'A refresh token unused this long expires (14 days).' }),
  IDENTITY_SESSION_MAX_SECONDS: Type.Integer({ minimum: 600, default: 2_592_000, description: 'Absolute session lifetime (30 days).' }),
  IDENTITY_REFRESH_REUSE_GRACE_SECONDS: Type.Integer({ minimum: 0, maximum: 60, default: 0, description: 'Reuse of a just-rotated refresh token within this window is refused without revoking the session (0: every reuse revokes).' }),
  IDENTITY_ARGON2_MEMORY_KIB: Type.Integer({ minimum: 7168, default: 19_456, description: 'argon2id memory cost in KiB (OWASP minimum 19456 with time cost 2).' }),
  IDENTITY_ARGON2_TIME_COST: Type.Integer({ minimum: 1, default: 2, description: 'argon2id iterations.' }),
  IDENTITY_ARGON2_PARALLELISM: Type.Integer({ minimum: 1, maximum: 16, default: 1, description: 'argon2id lanes.' }),
  IDENTITY_LOGIN_THROTTLE_ENABLED: Type.Boolean({ default: true, description: 'Refuse logins with 429 after repeated failures.' }),
  IDENTITY_LOGIN_MAX_FAILURES_PER_EMAIL: Type.Integer({ minimum: 1, default: 5, description: 'Failures for one e-mail within the window before 429.' }),
  IDENTITY_LOGIN_MAX_FAILURES_PER_IP: Type.Integer({ minimum: 1, default: 20, description: 'Failures from one IP within the window before 429.' }),
  IDENTITY_LOGIN_THROTTLE_WINDOW_SECONDS: Type.Integer({ minimum: 1, default: 900, description: 'Length of the throttling window.' }),
  IDENTITY_API_KEY_MAX_LIFETIME_DAYS: Type.Integer({ minimum: 0, default: 0, description: 'Longest allowed key lifetime; keys without expiry get it. 0: no maximum.' }),
  IDENTITY_API_KEY_ROTATION_GRACE_SECONDS: Type.Integer({ minimum: 0, default: 86_400, description: 'Default time the old secret keeps working after a rotation (24 h).' }),
  IDENTITY_SELF_SERVICE_KEY_MAX_LIFETIME_DAYS: Type.Integer({ minimum: 1, maximum: 3650, default: 90, description: 'Longest lifetime of a key its owner makes through /me/keys (a role may set its own); self-service keys always expire.' }),
  IDENTITY_SELF_SERVICE_MAX_KEYS: Type.Integer({ minimum: 1, default: 25, description: 'Most active keys one user may hold.' }),
  IDENTITY_SELF_SERVICE_KEY_CHANGES_PER_HOUR: Type.Integer({ minimum: 1, default: 30, description: 'Key creations and rotations one user may make through /me/keys per hour (sliding window, on the traffic engine).' }),
  IDENTITY_AUDIT_RETENTION_DAYS: Type.Integer({ minimum: 0, default: 400, description: 'Audit records older than this are pruned (the chain still verifies from the last pruned record). 0: kept forever.' }),
  IDENTITY_USAGE_RETENTION_DAYS: Type.Integer({ minimum: 1, default: 90, description: 'Hourly key usage buckets older than this are forgotten.' }),
  IDENTITY_BODY_LIMIT_BYTES: Type.Integer({ minimum: 1024, default: 1_048_576, description: 'Largest accepted request body on the admin/internal listener (1 MiB).' }),
  IDENTITY_PUBLIC_BODY_LIMIT_BYTES: Type.Integer({ minimum: 1024, maximum: 1_048_576, default: 8_192, description: 'Largest accepted request body on the public listener: login, refresh, logout and self-service need a few hundred bytes (8 KiB).' }),
  ...listenerEnvProperties('IDENTITY', "identity's two listeners"),
  IDENTITY_TRUST_PROXY: Type.String({ default: 'false', description: 'Whose X-Forwarded-For to trust for client IPs: false, true, or a comma list of IPs/CIDRs (e.g. the gateways).' }),
  ...tracingEnvProperties('portier-identity'),
  LOG_LEVEL: LOG_LEVEL_PROPERTY,
  LOG_FORMAT: LOG_FORMAT_PROPERTY
}, { additionalProperties: true })

type IdentityEnv = Static<typeof IdentityEnvSchema>

/**
 * The CLI's environment: the same schema without the two HTTP credentials. The CLI
 * opens the database itself, so whoever may run it is already trusted by the file
 * system; the server still requires both.
 */
export const IdentityCliEnvSchema = Type.Omit(IdentityEnvSchema, ['IDENTITY_ADMIN_TOKEN', 'IDENTITY_SERVICE_TOKEN'])

type IdentityCliEnv = Static<typeof IdentityCliEnvSchema>

/** What identity (server and CLI) says when signing keys would be stored in clear by default. */
export const SIGNING_KEY_ENCRYPTION_KEY_REQUIRED = 'IDENTITY_SIGNING_KEY_ENCRYPTION_KEY: is required: signing private keys are never stored in clear ' +
  'unless IDENTITY_SIGNING_KEY_ENCRYPTION=off; generate one with `openssl rand -hex 32` and give the same value to every identity process and the CLI ' +
  '(npm start generates and keeps one in credentials.json beside the database)'

/** OWASP's argon2id equivalences all have memory × iterations ≥ 35840 KiB. */
const OWASP_MIN_MEMORY_TIMES_ITERATIONS = 35_840

export interface Argon2Params { memoryCost: number, timeCost: number, parallelism: number }

/** Everything but the HTTP credentials: what the services and the CLI need. */
export interface IdentityCoreConfig {
  host: string
  port: number
  adminHost: string
  adminPort: number
  databasePath: string
  /** Where invalidation events are published (REDIS_URL or REDIS_CLUSTER_NODES); undefined: in process only. */
  redis: RedisTarget | undefined
  eventsChannel: string
  issuer: string
  audience: string
  signingAlg: AccessTokenAlgorithm
  /** Secret from which signing private keys are encrypted at rest; undefined: stored unencrypted. */
  signingKeyEncryptionKey: string | undefined
  /** The former secret during a change of it: what it encrypted is re-encrypted at start. */
  previousSigningKeyEncryptionKey: string | undefined
  refreshIdleSeconds: number
  sessionMaxSeconds: number
  refreshReuseGraceSeconds: number
  argon2: Argon2Params
  loginThrottle: { enabled: boolean, maxFailuresPerEmail: number, maxFailuresPerIp: number, windowSeconds: number }
  apiKeyMaxLifetimeDays: number
  apiKeyRotationGraceSeconds: number
  /** False only when IDENTITY_SIGNING_KEY_ENCRYPTION is off: then the key may be absent. */
  signingKeyEncryptionRequired: boolean
  selfService: { keyMaxLifetimeDays: number, maxKeys: number, keyChangesPerHour: number }
  auditRetentionDays: number
  usageRetentionDays: number
  /** Body limit of the admin/internal listener. */
  bodyLimitBytes: number
  /** Body limit of the public listener (login, refresh, logout, self-service). */
  publicBodyLimitBytes: number
  /** Both listeners' header, request and keep-alive timeouts. */
  timeouts: ListenerTimeouts
  /** Body bytes both listeners may hold at once, together. */
  bufferedBodiesMaxBytes: number
  /** What both listeners do with a request body they answer without reading. */
  unreadBodies: UnreadBodyLimits
  trustProxy: boolean | string
  logLevel: string
  /** LOG_FORMAT: how stdout's lines are written (json unless set). */
  logFormat?: LogFormat
  /** OpenTelemetry tracing (OTEL_*); absent or null: off. */
  tracing?: TracingConfig | null
}

export interface IdentityConfig extends IdentityCoreConfig {
  adminToken: string
  serviceToken: string
}

function coreConfig (e: IdentityCliEnv): IdentityCoreConfig {
  const problems: string[] = []
  if (e.IDENTITY_ARGON2_MEMORY_KIB * e.IDENTITY_ARGON2_TIME_COST < OWASP_MIN_MEMORY_TIMES_ITERATIONS) {
    problems.push(`IDENTITY_ARGON2_MEMORY_KIB × IDENTITY_ARGON2_TIME_COST: must be at least ${OWASP_MIN_MEMORY_TIMES_ITERATIONS} (OWASP: 19456 KiB × 2, 12288 × 3, 9216 × 4 or 7168 × 5)`)
  }
  if (e.IDENTITY_SIGNING_KEY_ENCRYPTION === 'on' && e.IDENTITY_SIGNING_KEY_ENCRYPTION_KEY === undefined) {
    // Whoever reads a file holding a private key in clear can sign tokens granting any permission.
    problems.push(SIGNING_KEY_ENCRYPTION_KEY_REQUIRED)
  } else if (e.IDENTITY_SIGNING_KEY_ENCRYPTION_KEY_PREVIOUS !== undefined && e.IDENTITY_SIGNING_KEY_ENCRYPTION_KEY === undefined) {
    // Re-encrypting with nothing would silently store the keys unencrypted again.
    problems.push('IDENTITY_SIGNING_KEY_ENCRYPTION_KEY_PREVIOUS: requires IDENTITY_SIGNING_KEY_ENCRYPTION_KEY (the new key)')
  }
  const redis = parseRedisTarget({ url: e.REDIS_URL, clusterNodes: e.REDIS_CLUSTER_NODES })
  problems.push(...redis.problems)
  const listeners = listenerLimitsFromEnv('IDENTITY', e)
  problems.push(...listeners.problems)
  const tracing = tracingConfigOf(e)
  problems.push(...tracing.problems)
  if (problems.length > 0) throw new ConfigError('identity environment', problems)
  return {
    host: e.IDENTITY_HOST,
    port: e.IDENTITY_PORT,
    adminHost: e.IDENTITY_ADMIN_HOST,
    adminPort: e.IDENTITY_ADMIN_PORT,
    databasePath: e.IDENTITY_DATABASE_PATH,
    redis: redis.target,
    eventsChannel: e.IDENTITY_EVENTS_CHANNEL,
    issuer: e.IDENTITY_ISSUER,
    audience: e.IDENTITY_AUDIENCE,
    signingAlg: e.IDENTITY_SIGNING_ALG,
    signingKeyEncryptionKey: e.IDENTITY_SIGNING_KEY_ENCRYPTION_KEY,
    previousSigningKeyEncryptionKey: e.IDENTITY_SIGNING_KEY_ENCRYPTION_KEY_PREVIOUS,
    refreshIdleSeconds: e.IDENTITY_REFRESH_IDLE_SECONDS,
    sessionMaxSeconds: e.IDENTITY_SESSION_MAX_SECONDS,
    refreshReuseGraceSeconds: e.IDENTITY_REFRESH_REUSE_GRACE_SECONDS,
    argon2: {
      memoryCost: e.IDENTITY_ARGON2_MEMORY_KIB,
      timeCost: e.IDENTITY_ARGON2_TIME_COST,
      parallelism: e.IDENTITY_ARGON2_PARALLELISM
    },
    loginThrottle: {
      enabled: e.IDENTITY_LOGIN_THROTTLE_ENABLED,
      maxFailuresPerEmail: e.IDENTITY_LOGIN_MAX_FAILURES_PER_EMAIL,
      maxFailuresPerIp: e.IDENTITY_LOGIN_MAX_FAILURES_PER_IP,
      windowSeconds: e.IDENTITY_LOGIN_THROTTLE_WINDOW_SECONDS
    },
    apiKeyMaxLifetimeDays: e.IDENTITY_API_KEY_MAX_LIFETIME_DAYS,
    apiKeyRotationGraceSeconds: e.IDENTITY_API_KEY_ROTATION_GRACE_SECONDS,
    signingKeyEncryptionRequired: e.IDENTITY_SIGNING_KEY_ENCRYPTION === 'on',
    selfService: {
      keyMaxLifetimeDays: e.IDENTITY_SELF_SERVICE_KEY_MAX_LIFETIME_DAYS,
      maxKeys: e.IDENTITY_SELF_SERVICE_MAX_KEYS,
      keyChangesPerHour: e.IDENTITY_SELF_SERVICE_KEY_CHANGES_PER_HOUR
    },
    auditRetentionDays: e.IDENTITY_AUDIT_RETENTION_DAYS,
    usageRetentionDays: e.IDENTITY_USAGE_RETENTION_DAYS,
    bodyLimitBytes: e.IDENTITY_BODY_LIMIT_BYTES,
    publicBodyLimitBytes: e.IDENTITY_PUBLIC_BODY_LIMIT_BYTES,
    timeouts: listeners.timeouts,
    bufferedBodiesMaxBytes: listeners.bufferedBodiesMaxBytes,
    unreadBodies: listeners.unreadBodies,
    trustProxy: parseTrustProxy(e.IDENTITY_TRUST_PROXY),
    logLevel: e.LOG_LEVEL,
    logFormat: e.LOG_FORMAT,
    tracing: tracing.config
  }
}

/** Reads and validates identity's environment, deep-frozen; throws a ConfigError naming every bad variable. */
export function loadIdentityConfig (env: Record<string, string | undefined> = process.env): Readonly<IdentityConfig> {
  const e = validateConfig<IdentityEnv>(IdentityEnvSchema, env, 'identity environment')
  return deepFreeze({ ...coreConfig(e), adminToken: e.IDENTITY_ADMIN_TOKEN, serviceToken: e.IDENTITY_SERVICE_TOKEN })
}

/**
 * The CLI's configuration: validated like the server's, but IDENTITY_ADMIN_TOKEN and
 * IDENTITY_SERVICE_TOKEN are neither required nor read.
 */
export function loadIdentityCliConfig (env: Record<string, string | undefined> = process.env): Readonly<IdentityCoreConfig> {
  return deepFreeze(coreConfig(validateConfig<IdentityCliEnv>(IdentityCliEnvSchema, env, 'identity environment')))
}
