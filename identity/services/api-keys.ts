import { generateApiKey, parseApiKey } from '../../common/api-key-format.js'
import { newId } from '../../common/random.js'
import type { EventBus } from '../../common/event-bus.js'
import type { AuthEvent } from '../../common/events.js'
import type { Db } from '../store/database.js'
import type { ApiKeysStore, ApiKeyRecord, ApiKeySecretRecord } from '../store/api-keys-store.js'
import { IdentityProblems } from '../errors.js'
import type { IdentityMetrics } from '../observability/metrics.js'
import type { Clock } from './clock.js'
import type { SecretHasher } from './password-hasher.js'
import { normalizePermissions } from './permissions.js'

const DAY_MS = 86_400_000

export type KeyInvalidReason = 'malformed' | 'unknown' | 'wrong_secret' | 'expired' | 'revoked' | 'disabled' | 'secret_retired'

export type KeyVerification =
  | {
      valid: true
      key: ApiKeyRecord
      /** Set when the presented secret was replaced by a rotation and is in its grace period. */
      deprecation: { deprecatedAt: number, sunsetAt: number } | null
    }
  | { valid: false, reason: KeyInvalidReason }

export interface ApiKeysOptions {
  db: Db
  store: ApiKeysStore
  hasher: SecretHasher
  metrics: Pick<IdentityMetrics, 'keyVerifications'>
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

export type ApiKeys = ReturnType<typeof createApiKeys>

function isUniqueViolation (err: unknown): boolean {
  return (err as { code?: string }).code === 'SQLITE_CONSTRAINT_UNIQUE'
}

/**
 * The API key store: keys are issued once, kept as argon2id hashes of their secret,
 * rotated with a grace period for the old secret, and verified for the gateway.
 */
export function createApiKeys (options: ApiKeysOptions) {
  const { db, store, hasher, metrics, events, clock } = options

  function get (id: string): ApiKeyRecord {
    const key = store.byId(id)
    if (key === null) throw IdentityProblems.keyNotFound([id])
    return key
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
   * Malformed text is refused without a database read; an unknown lookup id, a revoked,
   * disabled or expired key or a retired secret without an argon2 run.
   */
  async function check (presented: string): Promise<KeyVerification> {
    const parsed = parseApiKey(presented)
    if (parsed === null) return { valid: false, reason: 'malformed' }
    const secret = store.secretByLookupId(parsed.lookupId)
    if (secret === null) return { valid: false, reason: 'unknown' }
    const key = store.byId(secret.keyId)
    if (key === null) return { valid: false, reason: 'unknown' }
    const now = clock.now()
    const state = keyState(key, now) ?? secretState(secret, now)
    if (state !== null) return { valid: false, reason: state }
    if (!await hasher.verify(secret.secretHash, parsed.secret)) return { valid: false, reason: 'wrong_secret' }
    // The argon2 run yields: a revocation or change that landed meanwhile must win.
    const changed = keyState(get(key.id), clock.now())
    if (changed !== null) return { valid: false, reason: changed }
    store.recordUse(key.id, secret.lookupId, clock.now())
    const deprecation = secret.retiredAt !== null && secret.graceUntil !== null
      ? { deprecatedAt: secret.retiredAt, sunsetAt: secret.graceUntil }
      : null
    return { valid: true, key: get(key.id), deprecation }
  }

  return {
    get,
    list: () => store.list(),
    secretsOf: (id: string) => store.secretsOf(id),

    async create (input: { name: string, permissions: string[], expiresAt: number | null }): Promise<CreatedKey> {
      if (store.byName(input.name) !== null) throw IdentityProblems.keyNameTaken([input.name])
      const { expiresAt, warnings } = checkedExpiry(input.expiresAt)
      const generated = generateApiKey()
      const secretHash = await hasher.hash(generated.secret)
      const id = newId('key')
      try {
        db.transaction(() => {
          store.insert({ id, name: input.name, permissions: normalizePermissions(input.permissions), expiresAt },
            { lookupId: generated.lookupId, secretHash }, clock.now())
        })()
      } catch (err) {
        // Two creations with one name raced past the check above: the unique index decides.
        if (isUniqueViolation(err)) throw IdentityProblems.keyNameTaken([input.name])
        throw err
      }
      return { key: get(id), secret: generated.key, warnings }
    },

    async update (id: string, changes: { permissions?: string[], expiresAt?: number | null }): Promise<{ key: ApiKeyRecord, warnings: string[] }> {
      const key = mutable(id)
      const { expiresAt, warnings } = changes.expiresAt !== undefined ? checkedExpiry(changes.expiresAt) : { expiresAt: key.expiresAt, warnings: [] }
      const permissions = changes.permissions !== undefined ? normalizePermissions(changes.permissions) : key.permissions
      store.update(id, permissions, expiresAt, clock.now())
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
      const generated = generateApiKey()
      const secretHash = await hasher.hash(generated.secret)
      const now = clock.now()
      db.transaction(() => { store.rotate(id, { lookupId: generated.lookupId, secretHash }, now + graceSeconds * 1000, now) })()
      await announce('key.rotated', id)
      return { key: get(id), secret: generated.key, warnings: [] }
    },

    /** Verifies a presented key for the gateway, and counts the result. */
    async verify (presented: string): Promise<KeyVerification> {
      const verification = await check(presented)
      metrics.keyVerifications.inc({ result: verification.valid ? 'valid' : verification.reason })
      return verification
    }
  }
}
