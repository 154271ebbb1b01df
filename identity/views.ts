import type { Static } from 'typebox'
import { API_KEY_PREFIX } from '../common/api-key-format.js'
import type { ApiKeyRecord, ApiKeySecretRecord } from './store/api-keys-store.js'
import type { RoleRecord } from './store/roles-store.js'
import type { SessionRecord } from './store/sessions-store.js'
import type { SigningKeyRecord } from './store/signing-keys-store.js'
import type { UserRecord } from './store/users-store.js'
import { ownerKeyName } from './services/key-namespace.js'
import type { ApiKeyView, OwnSessionView, RoleView, SessionView, SigningKeyView, UserView } from './schemas.js'

/**
 * Records → the JSON the admin API and the CLI show: snake_case members, ISO 8601
 * times, and never a hash or a secret.
 */
const iso = (ms: number): string => new Date(ms).toISOString()
const isoOrNull = (ms: number | null): string | null => (ms === null ? null : iso(ms))
const keyPrefix = (lookupId: string): string => `${API_KEY_PREFIX}${lookupId}`

export function userView (user: UserRecord, permissions: string[]): Static<typeof UserView> {
  return {
    id: user.id,
    email: user.email,
    roles: user.roles,
    permissions,
    status: user.disabledAt === null ? 'active' : 'disabled',
    created_at: iso(user.createdAt),
    updated_at: iso(user.updatedAt),
    password_changed_at: iso(user.passwordChangedAt),
    disabled_at: isoOrNull(user.disabledAt)
  }
}

export function roleView (role: RoleRecord): Static<typeof RoleView> {
  return {
    name: role.name,
    permissions: role.permissions,
    policies: role.policies,
    key_max_lifetime_days: role.keyMaxLifetimeDays,
    created_at: iso(role.createdAt),
    updated_at: iso(role.updatedAt)
  }
}

export function sessionView (session: SessionRecord, now: number): Static<typeof SessionView> {
  return {
    id: session.id,
    user_id: session.userId,
    ip_address: session.ipAddress,
    user_agent: session.userAgent,
    status: session.revokedAt !== null ? 'revoked' : session.expiresAt <= now ? 'expired' : 'active',
    created_at: iso(session.createdAt),
    last_used_at: iso(session.lastUsedAt),
    expires_at: iso(session.expiresAt),
    revoked_at: isoOrNull(session.revokedAt),
    revoked_reason: session.revokedReason
  }
}

function secretState (secret: ApiKeySecretRecord, now: number): 'current' | 'grace' | 'retired' {
  if (secret.retiredAt === null) return 'current'
  return (secret.graceUntil ?? 0) > now ? 'grace' : 'retired'
}

export function apiKeyView (key: ApiKeyRecord, secrets: ApiKeySecretRecord[], now: number): Static<typeof ApiKeyView> {
  const current = secrets.find((s) => s.retiredAt === null)
  const inGrace = secrets.find((s) => secretState(s, now) === 'grace')
  return {
    id: key.id,
    name: key.name,
    origin: key.origin,
    key_prefix: current !== undefined ? keyPrefix(current.lookupId) : '',
    key_last4: current?.last4 ?? null,
    permissions: key.permissions,
    policies: key.policies,
    owner_user_id: key.ownerUserId,
    status: key.revokedAt !== null
      ? 'revoked'
      : key.disabledAt !== null ? 'disabled' : key.expiresAt !== null && key.expiresAt <= now ? 'expired' : 'active',
    expires_at: isoOrNull(key.expiresAt),
    created_at: iso(key.createdAt),
    updated_at: iso(key.updatedAt),
    last_used_at: isoOrNull(key.lastUsedAt),
    last_used_route: key.lastUsedRoute,
    last_used_ip: key.lastUsedIp,
    disabled_at: isoOrNull(key.disabledAt),
    revoked_at: isoOrNull(key.revokedAt),
    rotation: inGrace === undefined
      ? null
      : {
          old_key_prefix: keyPrefix(inGrace.lookupId),
          old_key_last4: inGrace.last4,
          grace_until: iso(inGrace.graceUntil as number),
          old_secret_use_count: inGrace.useCount,
          old_secret_last_used_at: isoOrNull(inGrace.lastUsedAt)
        },
    secrets: secrets.map((s) => ({
      key_prefix: keyPrefix(s.lookupId),
      key_last4: s.last4,
      state: secretState(s, now),
      created_at: iso(s.createdAt),
      retired_at: isoOrNull(s.retiredAt),
      grace_until: isoOrNull(s.graceUntil),
      last_used_at: isoOrNull(s.lastUsedAt),
      last_used_route: s.lastUsedRoute,
      last_used_ip: s.lastUsedIp,
      use_count: s.useCount
    }))
  }
}

/** A key as its owner sees it through /me/keys: as operators do, with its name in the owner's namespace. */
export function ownKeyView (key: ApiKeyRecord, secrets: ApiKeySecretRecord[], now: number): Static<typeof ApiKeyView> {
  const view = apiKeyView(key, secrets, now)
  return key.ownerUserId === null ? view : { ...view, name: ownerKeyName(key.name, key.ownerUserId) }
}

export function ownSessionView (session: SessionRecord, currentSessionId: string): Static<typeof OwnSessionView> {
  return {
    id: session.id,
    ip_address: session.ipAddress,
    user_agent: session.userAgent,
    created_at: iso(session.createdAt),
    last_used_at: iso(session.lastUsedAt),
    expires_at: iso(session.expiresAt),
    current: session.id === currentSessionId
  }
}

export function signingKeyView (key: SigningKeyRecord, now: number): Static<typeof SigningKeyView> {
  return {
    kid: key.kid,
    alg: key.alg,
    status: key.retiredAt === null ? 'active' : (key.publishUntil ?? 0) > now ? 'published' : 'retired',
    created_at: iso(key.createdAt),
    retired_at: isoOrNull(key.retiredAt),
    publish_until: isoOrNull(key.publishUntil)
  }
}
