import { normalizePermissions, permits } from '../../common/permissions.js'
import { isPortierProblem, type PortierProblem } from '../../common/problem.js'
import { IdentityProblems } from '../errors.js'
import type { ApiKeyRecord, ApiKeysStore } from '../store/api-keys-store.js'
import type { RoleRecord } from '../store/roles-store.js'
import type { UserRecord } from '../store/users-store.js'
import type { ApiKeys, CreatedKey } from './api-keys.js'
import type { AuditRecorder } from './audited.js'
import type { Clock } from './clock.js'
import type { KeyChangeLimiter } from './key-change-limiter.js'
import { namespacedKeyName } from './key-namespace.js'
import { operatorPermissionOnKey } from '../../common/operator-permissions.js'
import type { Users } from './users.js'

const DAY_MS = 86_400_000
/** Longest grace a user may give their old secret after a rotation: 7 days. */
export const MAX_SELF_SERVICE_GRACE_SECONDS = 604_800

/** IDENTITY_SELF_SERVICE_*: what self-service allows by default. */
export interface SelfServiceLimits {
  keyMaxLifetimeDays: number
  maxKeys: number
  keyChangesPerHour: number
}

export interface SelfServiceOptions {
  /** The key service as the apps use it (each change recorded in the audit trail). */
  apiKeys: Pick<ApiKeys, 'get' | 'secretsOf' | 'create' | 'rotate' | 'revoke'>
  keys: Pick<ApiKeysStore, 'ownedBy' | 'activeCountOf'>
  users: Pick<Users, 'get'>
  permissionsOf: (userId: string) => string[]
  rolesOf: (userId: string) => RoleRecord[]
  limiter: KeyChangeLimiter
  /** Where the refusals decided here are recorded (those of the key service record themselves). */
  audit: AuditRecorder
  clock: Clock
  limits: SelfServiceLimits
  /** IDENTITY_API_KEY_ROTATION_GRACE_SECONDS: a rotation's grace when none is asked (within the 7 days). */
  defaultRotationGraceSeconds: number
}

/** What a user may do with their own keys: GET /me. */
export interface Allowance {
  keyMaxLifetimeDays: number
  maxKeys: number
  activeKeys: number
  keysLeft: number
  keyChangesPerHour: number
}

export interface Profile {
  user: UserRecord
  permissions: string[]
  allowance: Allowance
}

export interface OwnNewKey {
  /** The name the owner sees (stored in their namespace). */
  name: string
  permissions: string[]
  expiresAt: number
}

export type SelfService = ReturnType<typeof createSelfService>

/**
 * A user's own API keys, bounded by their owner: a key grants at most what its owner's
 * roles grant when it is made, never an operator permission, always expires (within the
 * longest lifetime the owner's roles allow), and a user holds a limited number of active
 * keys and makes a limited number of changes per hour. Another user's key is unknown
 * here, answered exactly as an id nobody has.
 */
export function createSelfService (options: SelfServiceOptions) {
  const { apiKeys, keys, clock, limits, audit, limiter } = options

  function ownKey (userId: string, keyId: string): ApiKeyRecord {
    const key = apiKeys.get(keyId)
    // The same problem as an unknown id: no one learns that another user's key exists.
    if (key.ownerUserId !== userId) throw IdentityProblems.keyNotFound([keyId])
    return key
  }

  /** The largest of the lifetimes the user's roles set; the configured default when none does. */
  function keyMaxLifetimeDays (userId: string): number {
    const set = options.rolesOf(userId).flatMap((role) => (role.keyMaxLifetimeDays === null ? [] : [role.keyMaxLifetimeDays]))
    return set.length > 0 ? Math.max(...set) : limits.keyMaxLifetimeDays
  }

  /** Creation and rotation share one count per user: refused with Retry-After once it is full. */
  async function countChange (userId: string): Promise<void> {
    const retryAfterSeconds = await limiter.take(userId)
    if (retryAfterSeconds > 0) {
      throw IdentityProblems.keyChangesThrottled([retryAfterSeconds], { headers: { 'retry-after': String(retryAfterSeconds) } })
    }
  }

  /** The permissions asked for, or the refusal: an operator permission never goes on a key, nor one the owner does not hold. */
  function refusalOf (userId: string, permissions: readonly string[]): PortierProblem | null {
    const operator = operatorPermissionOnKey(permissions)
    if (operator !== null) return operator
    const held = options.permissionsOf(userId)
    const beyond = permissions.find((permission) => !permits(held, permission))
    return beyond === undefined ? null : IdentityProblems.permissionNotHeld([beyond])
  }

  return {
    profile (userId: string): Profile {
      const activeKeys = keys.activeCountOf(userId, clock.now())
      return {
        user: options.users.get(userId),
        permissions: options.permissionsOf(userId),
        allowance: {
          keyMaxLifetimeDays: keyMaxLifetimeDays(userId),
          maxKeys: limits.maxKeys,
          activeKeys,
          keysLeft: Math.max(0, limits.maxKeys - activeKeys),
          keyChangesPerHour: limits.keyChangesPerHour
        }
      }
    },

    /** Every key the user owns, whoever made it, revoked and expired ones included. */
    keys: (userId: string): ApiKeyRecord[] => keys.ownedBy(userId),
    key: ownKey,

    async createKey (userId: string, input: OwnNewKey): Promise<CreatedKey> {
      await countChange(userId)
      const name = namespacedKeyName(userId, input.name)
      const permissions = normalizePermissions(input.permissions)
      /**
       * An attempt beyond the owner's bounds is recorded: asking for more than one holds
       * is what the trail is for. Bad times are plain input errors, and are not.
       */
      const refuse = (problem: PortierProblem): never => {
        audit.record({
          action: 'key.create',
          outcome: 'failure',
          errorCode: problem.code,
          target: { type: 'api_key', id: null, name },
          changes: { after: { permissions } }
        })
        throw problem
      }
      const refusal = refusalOf(userId, permissions)
      if (refusal !== null) refuse(refusal)
      const now = clock.now()
      if (input.expiresAt <= now) throw IdentityProblems.expiryInPast()
      const days = keyMaxLifetimeDays(userId)
      if (input.expiresAt > now + days * DAY_MS) throw IdentityProblems.keyLifetimeTooLong([days])
      // Counted and inserted in one run of the event loop (the key service does not yield
      // before its insert), so concurrent creations cannot both take the last place.
      const activeKeys = keys.activeCountOf(userId, now)
      if (activeKeys >= limits.maxKeys) refuse(IdentityProblems.keyLimitReached([activeKeys]))
      try {
        return await apiKeys.create({ name, permissions, expiresAt: input.expiresAt, ownerUserId: userId, origin: 'self_service' })
      } catch (err) {
        // The owner's own name, not the stored one.
        if (isPortierProblem(err) && err.code === IdentityProblems.keyNameTaken.code) throw IdentityProblems.keyNameTaken([input.name])
        throw err
      }
    },

    /**
     * A new secret; the old one works for `graceSeconds` (default: the configured grace,
     * at most 7 days), never past the key's own expiry: a longer grace is cut to it, and
     * a warning says so.
     */
    async rotateKey (userId: string, keyId: string, graceSeconds?: number): Promise<CreatedKey> {
      await countChange(userId)
      const key = ownKey(userId, keyId)
      const asked = graceSeconds ?? Math.min(options.defaultRotationGraceSeconds, MAX_SELF_SERVICE_GRACE_SECONDS)
      const untilExpiry = key.expiresAt === null ? asked : Math.max(0, Math.floor((key.expiresAt - clock.now()) / 1000))
      const grace = Math.min(asked, untilExpiry)
      const rotated = await apiKeys.rotate(keyId, grace)
      if (grace === asked) return rotated
      const expiry = new Date(key.expiresAt ?? 0).toISOString()
      return {
        ...rotated,
        warnings: [...rotated.warnings, `grace_seconds ${asked} would outlast the key, which expires at ${expiry}: the old secret works ${grace} seconds, until then`]
      }
    },

    async revokeKey (userId: string, keyId: string): Promise<ApiKeyRecord> {
      ownKey(userId, keyId)
      return await apiKeys.revoke(keyId)
    }
  }
}
