/**
 * Which keys a list asks for (the admin API's and the CLI's key hygiene queries), as
 * SQL conditions over `api_keys k`: every condition given must hold. Instants are ms
 * since the epoch; `now` decides what has expired or is still in its grace period.
 */

/** A key's state as the key view shows it (revoked, else disabled, else expired, else active), or one in a rotation. */
export const KEY_LIST_STATUSES = ['active', 'disabled', 'revoked', 'expired', 'rotating'] as const
export type KeyListStatus = typeof KEY_LIST_STATUSES[number]

export interface KeyListFilter {
  ownerUserId?: string
  status?: KeyListStatus
  /** Expiring after now and at or before this instant. */
  expiringBy?: number
  /** Last used before this instant, or, never used, created before it. */
  idleSince?: number
  /** true: without an expiry; false: with one. */
  neverExpires?: boolean
}

const STATUS_CONDITIONS: Readonly<Record<KeyListStatus, string>> = Object.freeze({
  revoked: 'k.revoked_at IS NOT NULL',
  disabled: 'k.revoked_at IS NULL AND k.disabled_at IS NOT NULL',
  expired: 'k.revoked_at IS NULL AND k.disabled_at IS NULL AND k.expires_at <= @now',
  active: 'k.revoked_at IS NULL AND k.disabled_at IS NULL AND (k.expires_at IS NULL OR k.expires_at > @now)',
  // A retired secret still in its grace period; a revoked key's secrets open nothing, so it is in no rotation.
  rotating: `k.revoked_at IS NULL AND EXISTS (SELECT 1 FROM api_key_secrets s
    WHERE s.key_id = k.id AND s.retired_at IS NOT NULL AND s.grace_until > @now)`
})

/** The WHERE clause of `filter` (`1` for none) and its named parameters; values are never spliced into the SQL. */
export function keyListWhere (filter: KeyListFilter, now: number): { where: string, params: Record<string, string | number> } {
  const conditions: string[] = []
  const params: Record<string, string | number> = { now }
  if (filter.ownerUserId !== undefined) {
    conditions.push('k.owner_user_id = @owner')
    params.owner = filter.ownerUserId
  }
  if (filter.status !== undefined) conditions.push(`(${STATUS_CONDITIONS[filter.status]})`)
  if (filter.expiringBy !== undefined) {
    conditions.push('(k.expires_at > @now AND k.expires_at <= @expiringBy)')
    params.expiringBy = filter.expiringBy
  }
  if (filter.idleSince !== undefined) {
    conditions.push('coalesce(k.last_used_at, k.created_at) < @idleSince')
    params.idleSince = filter.idleSince
  }
  if (filter.neverExpires !== undefined) conditions.push(filter.neverExpires ? 'k.expires_at IS NULL' : 'k.expires_at IS NOT NULL')
  return { where: conditions.length === 0 ? '1' : conditions.join(' AND '), params }
}
