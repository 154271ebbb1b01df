import type { EventBus } from '../../common/event-bus.js'
import type { RedisClient } from '../../common/redis.js'
import { createRedisCounters } from '../../common/traffic/redis-counters.js'
import { ACCESS_TOKEN_TTL_SECONDS } from '../../common/access-token-profile.js'
import type { IdentityCoreConfig } from '../config.js'
import { createIdentityMetrics, type IdentityMetrics } from '../observability/metrics.js'
import type { Db } from '../store/db.js'
import { createApiKeysStore } from '../store/api-keys-store.js'
import { createKeyUsageStore } from '../store/key-usage-store.js'
import { createAuditStore } from '../store/audit-store.js'
import { createQuotaStore } from '../store/quota-store.js'
import { createRolesStore } from '../store/roles-store.js'
import { createSessionsStore } from '../store/sessions-store.js'
import { createSigningKeysStore } from '../store/signing-keys-store.js'
import { createUsersStore } from '../store/users-store.js'
import { createAccessTokens, type AccessTokens } from './access-tokens.js'
import { createApiKeys, type ApiKeys } from './api-keys.js'
import { createAudit, type Audit } from './audit.js'
import { systemContext, runAs } from './audit-context.js'
import { createAuditHeads, type AuditHeads } from './audit-head.js'
import { auditedApiKeys, auditedLogin, auditedRoles, auditedSessions, auditedSigningKeys, auditedUsers } from './audited-services.js'
import type { Clock } from './clock.js'
import { createLogin, type Login } from './login.js'
import { createLoginThrottle } from './login-throttle.js'
import { createKeySecrets } from './key-secrets.js'
import { createKeyUsage, type KeyUsage } from './key-usage.js'
import { createOwnedKeyNotices, createOwnerGrants } from './owned-keys.js'
import { createArgon2Hashers } from './password-hasher.js'
import { createQuotas, type Quotas } from './quotas.js'
import { createOperatorGrantCheck } from './operator-grants.js'
import { createRoles, type Roles } from './roles.js'
import { createKeyChangeLimiter } from './key-change-limiter.js'
import { createSelfService, type SelfService } from './self-service.js'
import { createSelfServiceSessions, type SelfServiceSessions } from './self-service-sessions.js'
import { createSessions, type Sessions } from './sessions.js'
import { createSigningKeyProtection } from './signing-key-protection.js'
import { createSigningKeys, type SigningKeys } from './signing-keys.js'
import { createGrants } from './user-grants.js'
import { createUsers, type Users } from './users.js'

/** Where start-up notes go: the server's logger; the CLI shows some on stderr. Counts only, never key material. */
export interface ServicesLog {
  info: (fields: Record<string, unknown>, msg: string) => void
  warn: (msg: string) => void
}

const silentLog: ServicesLog = { info () {}, warn () {} }

/** Everything identity does, wired once; shared by the HTTP apps and the CLI. */
export interface IdentityServices {
  clock: Clock
  login: Login
  sessions: Sessions
  users: Users
  roles: Roles
  apiKeys: ApiKeys
  quotas: Quotas
  signingKeys: SigningKeys
  accessTokens: AccessTokens
  /** Each key's requests over time, by outcome (hourly buckets the gateways' reports fill). */
  keyUsage: KeyUsage
  /** The audit trail (record, list, verify, prune) and its signed head. */
  audit: Audit & { heads: AuditHeads }
  /** The union of a user's role permissions. */
  permissionsOf: (userId: string) => string[]
  /** A user's own keys, bounded by them (/me/keys). */
  selfService: SelfService
  /** A user's own sessions (/me/sessions). */
  selfServiceSessions: SelfServiceSessions
}

/**
 * Settles how signing private keys are stored before any is used, and says so once:
 * throws a ConfigError when the configured secret cannot open them.
 */
function secureSigningKeys (signingKeys: SigningKeys, encrypting: boolean, log: ServicesLog): void {
  const review = signingKeys.secureStorage()
  if (review.encrypted > 0) log.info({ count: review.encrypted }, 'encrypted the signing private keys stored unencrypted')
  if (review.reencrypted > 0) log.info({ count: review.reencrypted }, 're-encrypted the signing private keys with the new IDENTITY_SIGNING_KEY_ENCRYPTION_KEY')
  if (!encrypting) log.warn('signing private keys are stored unencrypted: set IDENTITY_SIGNING_KEY_ENCRYPTION_KEY (openssl rand -hex 32) to encrypt them at rest')
}

export interface IdentityServicesDeps {
  db: Db
  events: EventBus
  clock: Clock
  /**
   * Where argon2 runs, key verifications, logins and refreshes are counted; the server
   * passes the set it serves at /metrics. Absent (the CLI, scripts): a private set
   * without process metrics, which nobody reads.
   */
  metrics?: IdentityMetrics
  log?: ServicesLog
  /**
   * Identity's Redis connection (config.redis), when it has one: the login throttle counts
   * failures there (shared, kept across restarts). Absent: in this process.
   */
  redis?: RedisClient | null
}

export async function createIdentityServices (config: IdentityCoreConfig, deps: IdentityServicesDeps): Promise<IdentityServices> {
  const { db, events, clock } = deps
  const metrics = deps.metrics ?? createIdentityMetrics({ processMetrics: false })
  const audit = createAudit({ store: createAuditStore(db), clock })
  const usersStore = createUsersStore(db)
  const rolesStore = createRolesStore(db)
  const apiKeysStore = createApiKeysStore(db)
  const grants = createGrants({ users: usersStore, roles: rolesStore })
  const ownerGrantsChanged = createOwnedKeyNotices({ keys: apiKeysStore, events, clock })
  const protection = createSigningKeyProtection({
    encryptionKey: config.signingKeyEncryptionKey, previousEncryptionKey: config.previousSigningKeyEncryptionKey
  })
  const signingKeys = auditedSigningKeys(createSigningKeys({
    store: createSigningKeysStore(db), clock, events, protection, alg: config.signingAlg, accessTokenTtlSeconds: ACCESS_TOKEN_TTL_SECONDS
  }), audit)
  secureSigningKeys(signingKeys, protection.encrypting, deps.log ?? silentLog)
  // Identity's own start-up work: the first signing key is recorded as made by the system, whoever opened the database.
  await runAs(systemContext('identity'), () => signingKeys.ensureActive())
  const hashers = await createArgon2Hashers(config.argon2, metrics)
  const accessTokens = createAccessTokens({
    signingKeys, clock, issuer: config.issuer, audience: config.audience, ttlSeconds: ACCESS_TOKEN_TTL_SECONDS
  })
  const sessions = createSessions({
    db,
    store: createSessionsStore(db),
    users: usersStore,
    grantsOf: grants.of,
    accessTokens,
    events,
    clock,
    metrics,
    accessTokenTtlSeconds: ACCESS_TOKEN_TTL_SECONDS,
    refreshIdleSeconds: config.refreshIdleSeconds,
    sessionMaxSeconds: config.sessionMaxSeconds,
    refreshReuseGraceSeconds: config.refreshReuseGraceSeconds
  })
  const operatorGrants = createOperatorGrantCheck((userId) => usersStore.permissionsOf(userId))
  const users = createUsers({ db, store: usersStore, roles: rolesStore, hasher: hashers.passwords, sessions, events, clock, ownerGrantsChanged, operatorGrants })
  // Identity's clock, not Redis's: identity is the one writer, and its tests move the clock.
  const counters = deps.redis !== undefined && deps.redis !== null ? createRedisCounters(deps.redis, { now: clock.now }) : undefined
  const throttle = createLoginThrottle({
    ...config.loginThrottle,
    clock,
    ...(counters !== undefined ? { store: counters } : {}),
    log: deps.log ?? silentLog
  })
  const apiKeys = createApiKeys({
    db,
    store: apiKeysStore,
    users: usersStore,
    ownerGrants: createOwnerGrants({ users: usersStore, policiesOf: grants.policiesOf }),
    secrets: createKeySecrets(hashers.apiKeySecrets, metrics),
    metrics,
    events,
    clock,
    maxLifetimeDays: config.apiKeyMaxLifetimeDays,
    defaultRotationGraceSeconds: config.apiKeyRotationGraceSeconds
  })
  const services = {
    clock,
    // Inside, the services call each other unwrapped; what the apps and the CLI call records itself.
    login: auditedLogin(createLogin({ users: usersStore, userAccounts: users, hasher: hashers.passwords, sessions, throttle, metrics }), usersStore, audit),
    sessions: auditedSessions(sessions, audit),
    users: auditedUsers(users, audit),
    roles: auditedRoles(createRoles({ db, store: rolesStore, events, clock, ownerGrantsChanged, operatorGrants }), audit),
    apiKeys: auditedApiKeys(apiKeys, audit, clock),
    keyUsage: createKeyUsage({ store: createKeyUsageStore(db), apiKeys, clock, retentionDays: config.usageRetentionDays }),
    quotas: createQuotas({ store: createQuotaStore(db), clock }),
    signingKeys,
    accessTokens,
    audit: { ...audit, heads: createAuditHeads({ audit, signingKeys, clock, issuer: config.issuer }) },
    permissionsOf: (userId: string) => usersStore.permissionsOf(userId)
  }
  // Through the recorded services: what a user changes themselves is in the audit trail too.
  const selfService = createSelfService({
    apiKeys: services.apiKeys,
    keys: apiKeysStore,
    users: services.users,
    permissionsOf: services.permissionsOf,
    rolesOf: rolesStore.ofUser,
    limiter: createKeyChangeLimiter({ perHour: config.selfService.keyChangesPerHour, clock, store: counters, log: deps.log ?? silentLog }),
    audit,
    clock,
    limits: config.selfService,
    defaultRotationGraceSeconds: config.apiKeyRotationGraceSeconds
  })
  return { ...services, selfService, selfServiceSessions: createSelfServiceSessions({ sessions: services.sessions, clock }) }
}
