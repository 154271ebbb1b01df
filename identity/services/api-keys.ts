import { generateApiKey, lastFourOf, parseApiKey } from '../../common/api-key-format.js'
import { newId } from '../../common/random.js'
import type { EventBus } from '../../common/event-bus.js'
import type { AuthEvent } from '../../common/events.js'
import type { KeyInvalidReason } from '../../common/internal-api.js'
import { intersectPermissions, normalizePermissions } from '../../common/permissions.js'
import type { GrantedPolicy, TrafficPolicy } from '../../common/traffic/policy.js'
import type { Db } from '../store/db.js'
import type { ApiKeysStore, ApiKeyRecord, ApiKeySecretRecord, KeyOrigin, KeyUseReport, NewSecret } from '../store/api-keys-store.js'
import type { UsersStore } from '../store/users-store.js'
import { CommonProblems } from '../../common/problem.js'
import { IdentityProblems } from '../errors.js'
import type { IdentityMetrics } from '../observability/metrics.js'
import type { KeyVerificationResult } from '../observability/metrics.js'
import { createAttemptBudget } from './attempt-budget.js'
import type { Clock } from './clock.js'
import { userNamespaceOf } from './key-namespace.js'
import { operatorPermissionOnKey } from '../../common/operator-permissions.js'
import type { KeySecrets } from './key-secrets.js'
import type { OwnerGrantsOf } from './owned-keys.js'
import { checkedPolicies, keyPolicyGrants } from './traffic-policies.js'
import { keyListFilter, type KeyListCriteria } from './key-list.js'

const DAY_MS = 86_400_000
/**
 * Wrong secrets a lookup id may present to a legacy argon2id row per window before
 * identity stops running argon2 for it and answers `unknown` unchecked (the same
 * budget as a login e-mail's). SHA-256 rows are always checked: a check costs less
 * than the lookup before it, and refusing a right secret because others sent wrong
 * ones would let anyone who saw a key's prefix lock its holder out.
 */
export const LEGACY_WRONG_SECRETS_PER_WINDOW = 5
export const LEGACY_WRONG_SECRET_WINDOW_MS = 15 * 60_000

export type KeyVerification =
  | {
    valid: true
    key: ApiKeyRecord
    /** What the key may do: its own permissions, within its owner's current ones when it has an owner. */
    permissions: string[]
    /** The key's own traffic policies, then its owner's roles' (as of this verification). */
    policies: GrantedPolicy[]
    /** Set when the presented secret was replaced by a rotation and is in its grace period. */
    deprecation: { deprecatedAt: number, sunsetAt: number } | null
  }
  | { valid: false, reason: KeyInvalidReason }

export interface ApiKeysOptions {
  db: Db
  store: ApiKeysStore
  /** Where a key's owner must exist. */
  users: Pick<UsersStore, 'byId'>
  /** What a key's owner grants it now (null: the owner is disabled, the key refused). */
  ownerGrants: OwnerGrantsOf
  secrets: KeySecrets
  metrics: Pick<IdentityMetrics, 'keyVerifications' | 'keyHashUpgrades'>
  events: EventBus
  clock: Clock
  maxLifetimeDays: number
  defaultRotationGraceSeconds: number
}

export interface CreatedKey {
  key: ApiKeyRecord
  /** The full key text: shown once, never stored. */
  secret: string
  warnings: string[]
}

export interface NewKey {
  name: string
  permissions: string[]
  expiresAt: number | null
  /** Absent: none. */
  policies?: TrafficPolicy[]
  /** The user the key belongs to; absent or null: nobody's. */
  ownerUserId?: string | null
  /** Where it is made; absent: the admin API. */
  origin?: KeyOrigin
}

export type ApiKeys = ReturnType<typeof createApiKeys>

function isUniqueViolation (err: unknown): boolean {
  return (err as { code?: string }).code === 'SQLITE_CONSTRAINT_UNIQUE'
}

/** A refusal as answered, and as counted (finer: see KeyVerificationResult). */
interface Checked { verification: KeyVerification, result: KeyVerificationResult }

const refused = (reason: KeyInvalidReason, result: KeyVerificationResult = reason): Checked =>
  ({ verification: { valid: false, reason }, result })

/**
 * The API key store: keys are issued once, kept as SHA-256 hashes of their secret,
 * rotated with a grace period for the old secret, and verified for the gateway.
 */
export function createApiKeys (options: ApiKeysOptions) {
  const { db, store, users, secrets, metrics, events, clock } = options
  const legacyBudget = createAttemptBudget({ limit: LEGACY_WRONG_SECRETS_PER_WINDOW, windowMs: LEGACY_WRONG_SECRET_WINDOW_MS, clock })

  /** A new key text (shown once) and what is stored of it: its lookup id, a hash, and its last 4 characters to tell it by. */
  function newSecret (): { key: string, stored: NewSecret } {
    const generated = generateApiKey()
    return { key: generated.key, stored: { lookupId: generated.lookupId, secretHash: secrets.hash(generated.secret), last4: lastFourOf(generated.key) } }
  }

  function get (id: string): ApiKeyRecord {
    const key = store.byId(id)
    if (key === null) throw IdentityProblems.keyNotFound([id])
    return key
  }

  function requireOwner (userId: string | null): string | null {
    if (userId !== null && users.byId(userId) === null) throw IdentityProblems.userNotFound([userId])
    return userId
  }

  /** Only its owner, through self-service, makes keys in a user's namespace (key-namespace.ts): nobody squats it. */
  function requireOwnNamespace (name: string, origin: KeyOrigin, ownerUserId: string | null): void {
    const namespace = userNamespaceOf(name)
    if (namespace !== null && (origin !== 'self_service' || namespace !== ownerUserId)) {
      throw CommonProblems.validationFailed([`name: a name starting with ${namespace}/ is in that user's own namespace, for the keys they make themselves`])
    }
  }

  function requireKeyPermissions (permissions: readonly string[]): void {
    const refusal = operatorPermissionOnKey(permissions)
    if (refusal !== null) throw refusal
  }

  function mutable (id: string): ApiKeyRecord {
    const key = get(id)
    if (key.revokedAt !== null) throw IdentityProblems.keyRevoked([id])
    return key
  }

  async function announce (type: Extract<AuthEvent, { keyId: string }>['type'], keyId: string): Promise<void> {
    await events.publish({ type, keyId, at: new Date(clock.now()).toISOString() })
  }

  /** Applies the maximum lifetime: an absent expiry gets the maximum, a later one is refused. */
  function checkedExpiry (expiresAt: number | null): { expiresAt: number | null, warnings: string[] } {
    const now = clock.now()
    if (expiresAt !== null && expiresAt <= now) throw IdentityProblems.expiryInPast()
    if (options.maxLifetimeDays > 0) {
      const latest = now + options.maxLifetimeDays * DAY_MS
      if (expiresAt === null) return { expiresAt: latest, warnings: [`no expires_at given: set to the maximum lifetime of ${options.maxLifetimeDays} days`] }
      if (expiresAt > latest) throw IdentityProblems.keyLifetimeTooLong([options.maxLifetimeDays])
    }
    return { expiresAt, warnings: expiresAt === null ? ['this key never expires; an expiry is advised so that keys are renewed at intervals'] : [] }
  }

  /** Why a key (independent of the presented secret) cannot authenticate. */
  function keyState (key: ApiKeyRecord, now: number): KeyInvalidReason | null {
    if (key.revokedAt !== null) return 'revoked'
    if (key.disabledAt !== null) return 'disabled'
    if (key.expiresAt !== null && key.expiresAt <= now) return 'expired'
    return null
  }

  function secretState (secret: ApiKeySecretRecord, now: number): KeyInvalidReason | null {
    if (secret.retiredAt !== null && (secret.graceUntil ?? 0) <= now) return 'secret_retired'
    return null
  }

  /**
   * Malformed text is refused without a database read; an unknown lookup id after one
   * index read. Then the secret is checked, and only a verified secret learns the key's
   * state: a wrong secret answers `unknown` whatever the key's state, in about the time
   * an unknown lookup id takes (both hash the presented secret once: microseconds).
   */
  async function check (presented: string): Promise<Checked> {
    const parsed = parseApiKey(presented)
    if (parsed === null) return refused('malformed')
    const { lookupId } = parsed
    let stored: ApiKeySecretRecord | null
    let legacy: boolean
    // Legacy argon2id rows cost an argon2 run per check: at most the budget's failures and
    // running checks per lookup id; a check beyond waits for a running one to end, then reads
    // the row again (the one that ended may have rewritten it as SHA-256).
    for (;;) {
      stored = store.secretByLookupId(lookupId)
      if (stored === null) {
        secrets.verifyAgainstNothing(parsed.secret)
        return refused('unknown')
      }
      legacy = secrets.schemeOf(stored.secretHash) === 'argon2id'
      if (!legacy) break
      if (legacyBudget.retryAfterSeconds(lookupId) > 0) return refused('unknown', 'throttled')
      if (legacyBudget.hasRoom(lookupId)) {
        legacyBudget.start(lookupId)
        break
      }
      await legacyBudget.ended(lookupId)
    }
    let valid: boolean
    let upgradedHash: string | null
    try {
      ({ valid, upgradedHash } = await secrets.verify(stored.secretHash, parsed.secret))
    } catch (err) {
      if (legacy) legacyBudget.end(lookupId, 'failure', false)
      throw err
    }
    if (legacy) legacyBudget.end(lookupId, valid ? 'success' : 'failure', true)
    if (!valid) return refused('unknown', 'wrong_secret')
    if (upgradedHash !== null && store.replaceSecretHash(lookupId, stored.secretHash, upgradedHash)) metrics.keyHashUpgrades.inc()
    // Read after the check: a revocation, rotation or change that landed during an argon2 run wins.
    const secret = store.secretByLookupId(lookupId)
    const key = secret === null ? null : store.byId(secret.keyId)
    if (secret === null || key === null) return refused('unknown')
    const now = clock.now()
    // A key with an owner is bounded by the owner as they are now. A disabled (or gone)
    // owner's key answers exactly as a disabled key does, in whatever state it is
    // (expired, its secret retired): the holder learns nothing of the owner.
    const owner = key.ownerUserId === null ? null : options.ownerGrants(key.ownerUserId)
    const state = keyState(key, now)
    if (state === 'revoked' || state === 'disabled') return refused(state)
    if (key.ownerUserId !== null && owner === null) return refused('disabled', 'owner_disabled')
    const secretOrKeyState = state ?? secretState(secret, now)
    if (secretOrKeyState !== null) return refused(secretOrKeyState)
    const deprecation = secret.retiredAt !== null && secret.graceUntil !== null
      ? { deprecatedAt: secret.retiredAt, sunsetAt: secret.graceUntil }
      : null
    if (owner === null) {
      return { verification: { valid: true, key, permissions: key.permissions, policies: keyPolicyGrants(key.policies, []), deprecation }, result: 'valid' }
    }
    const permissions = intersectPermissions(key.permissions, owner.permissions)
    return { verification: { valid: true, key, permissions, policies: keyPolicyGrants(key.policies, owner.policies), deprecation }, result: 'valid' }
  }

  return {
    get,
    /** Every key, or those matching `criteria` (key hygiene queries), oldest first. */
    list: (criteria: KeyListCriteria = {}) => store.listMatching(keyListFilter(criteria, clock.now()), clock.now()),
    secretsOf: (id: string) => store.secretsOf(id),

    async create (input: NewKey): Promise<CreatedKey> {
      requireKeyPermissions(input.permissions)
      const policies = checkedPolicies(input.policies ?? [])
      const ownerUserId = requireOwner(input.ownerUserId ?? null)
      const origin = input.origin ?? 'admin'
      requireOwnNamespace(input.name, origin, ownerUserId)
      if (store.byName(input.name) !== null) throw IdentityProblems.keyNameTaken([input.name])
      const { expiresAt, warnings } = checkedExpiry(input.expiresAt)
      const generated = newSecret()
      const id = newId('key')
      try {
        db.transaction(() => {
          store.insert({ id, name: input.name, origin, permissions: normalizePermissions(input.permissions), policies, ownerUserId, expiresAt },
            generated.stored, clock.now())
        })()
      } catch (err) {
        // Two creations with one name raced past the check above: the unique index decides.
        if (isUniqueViolation(err)) throw IdentityProblems.keyNameTaken([input.name])
        throw err
      }
      return { key: get(id), secret: generated.key, warnings }
    },

    /** Changes what is given (policies replace the key's own), keeps the rest. */
    async update (id: string, changes: { permissions?: string[], expiresAt?: number | null, policies?: TrafficPolicy[] }): Promise<{ key: ApiKeyRecord, warnings: string[] }> {
      const key = mutable(id)
      if (changes.permissions !== undefined) requireKeyPermissions(changes.permissions)
      const policies = changes.policies !== undefined ? checkedPolicies(changes.policies) : key.policies
      const { expiresAt, warnings } = changes.expiresAt !== undefined ? checkedExpiry(changes.expiresAt) : { expiresAt: key.expiresAt, warnings: [] }
      const permissions = changes.permissions !== undefined ? normalizePermissions(changes.permissions) : key.permissions
      store.update(id, { permissions, policies, expiresAt }, clock.now())
      await announce('key.updated', id)
      return { key: get(id), warnings }
    },

    async setDisabled (id: string, disabled: boolean): Promise<ApiKeyRecord> {
      const key = mutable(id)
      if ((key.disabledAt !== null) === disabled) return key
      store.setDisabled(id, disabled ? clock.now() : null, clock.now())
      await announce(disabled ? 'key.disabled' : 'key.enabled', id)
      return get(id)
    },

    /** Revocation is final. */
    async revoke (id: string): Promise<ApiKeyRecord> {
      get(id)
      if (store.setRevoked(id, clock.now())) await announce('key.revoked', id)
      return get(id)
    },

    /**
     * A new secret for the same key record; the old secret keeps working for
     * `graceSeconds` (0: it stops at once), and its uses are counted.
     */
    async rotate (id: string, graceSeconds: number = options.defaultRotationGraceSeconds): Promise<CreatedKey> {
      mutable(id)
      const generated = newSecret()
      const now = clock.now()
      db.transaction(() => { store.rotate(id, generated.stored, now + graceSeconds * 1000, now) })()
      await announce('key.rotated', id)
      return { key: get(id), secret: generated.key, warnings: [] }
    },

    /**
     * Adds the uses gateways counted (every request they let through with a key, cached
     * or not): once per batch id, unknown lookup ids skipped. A use reported later than
     * now (a gateway's clock ahead of ours) is taken as now. `alongside` runs in the
     * same transaction, once per batch id (the hourly outcomes: services/key-usage.ts).
     */
    recordUses (batchId: string, uses: readonly KeyUseReport[], alongside?: () => void) {
      const now = clock.now()
      const bounded = uses.map((use) => ({ ...use, lastUsedAt: Math.min(use.lastUsedAt, now) }))
      return store.recordUses(batchId, bounded, now, alongside)
    },

    /**
     * Verifies a presented key for the gateway, and counts the result. A verification
     * is not a use: the gateway reports every request it serves with the key, this
     * one included (recordUses).
     */
    async verify (presented: string): Promise<KeyVerification> {
      const { verification, result } = await check(presented)
      metrics.keyVerifications.inc({ result })
      return verification
    }
  }
}
