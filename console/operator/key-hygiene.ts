import { permits } from '../../common/permissions.js'
import { isOperatorPermission } from '../../common/operator-permissions.js'
import type { OwnKey } from '../identity-client.js'

/**
 * What the operator pages read of keys and their owners, and the judgements the
 * Overview makes of them: pure functions of identity's answers, so each rule is tested
 * on its own and every number on the page comes from the data.
 */

/** A key as identity's admin API shows it: what its owner sees, plus whose it is. */
export interface AdminKey extends OwnKey {
  owner_user_id: string | null
  origin: string
  disabled_at: string | null
  revoked_at: string | null
}

/** What the key pages need of a user as identity's admin API shows them. */
export interface KeyOwner {
  id: string
  email: string
  status: 'active' | 'disabled'
  /** The union of their roles' permissions, as identity grants them now. */
  permissions: string[]
}

export type Owners = ReadonlyMap<string, KeyOwner>

/**
 * The key's name without its owner's namespace: a key its owner made for themselves is
 * stored as `<owner id>/<name>`, and the table shows the owner in a column of its own.
 */
export function shortKeyName (key: Pick<AdminKey, 'name' | 'owner_user_id'>): string {
  const prefix = key.owner_user_id === null ? null : `${key.owner_user_id}/`
  return prefix !== null && key.name.startsWith(prefix) ? key.name.slice(prefix.length) : key.name
}

/**
 * True when a key's permissions allow every permission its owner holds (wildcards
 * counted: `users:*` covers `users:read`), so the key is as strong as the owner. An
 * owner's operator permissions are left out (a key never carries them); an owner
 * holding nothing else lends a key nothing, so such a key is not counted.
 */
export function coversOwner (keyPermissions: readonly string[], ownerPermissions: readonly string[]): boolean {
  const lent = ownerPermissions.filter((permission) => !isOperatorPermission(permission))
  return lent.length > 0 && lent.every((permission) => permits(keyPermissions, permission))
}

/**
 * Whether identity lets a key through at use, by what the admin views say: an active key,
 * and, when it has an owner, an active owner (a disabled or unknown owner's key is
 * refused as a disabled key is).
 */
export function keyWorks (key: Pick<AdminKey, 'status' | 'owner_user_id'>, owners: Owners): boolean {
  if (key.status !== 'active') return false
  return key.owner_user_id === null || owners.get(key.owner_user_id)?.status === 'active'
}

/** Working keys as strong as their owner: whoever holds the key holds all the owner may do. */
export function overPrivilegedKeys<K extends AdminKey> (keys: readonly K[], owners: Owners): K[] {
  return keys.filter((key) => {
    const owner = key.owner_user_id === null ? undefined : owners.get(key.owner_user_id)
    return owner !== undefined && keyWorks(key, owners) && coversOwner(key.permissions, owner.permissions)
  })
}

/**
 * Active keys whose owner is disabled (or no longer known): `held`, and how many of them
 * identity would still let through (`usable`), by the same rule as every other key.
 */
export function disabledOwnersKeys (keys: readonly AdminKey[], owners: Owners): { held: number, usable: number } {
  const held = keys.filter((key) => key.status === 'active' && key.owner_user_id !== null && owners.get(key.owner_user_id)?.status !== 'active')
  return { held: held.length, usable: held.filter((key) => keyWorks(key, owners)).length }
}
