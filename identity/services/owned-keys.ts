import type { EventBus } from '../../common/event-bus.js'
import type { GrantedPolicy } from '../../common/traffic/policy.js'
import type { ApiKeysStore } from '../store/api-keys-store.js'
import type { UsersStore } from '../store/users-store.js'
import type { Clock } from './clock.js'

/**
 * Announces that what some users' keys may do changed (their roles, a role's
 * permissions or policies, the user disabled or enabled); resolves once every event
 * is published.
 */
export type OwnerGrantsChanged = (userIds: readonly string[]) => Promise<void>

/**
 * A key with an owner is bounded by that owner when it is used (see createOwnerBounds),
 * and gateways cache verdicts by key id: when the owner's grants change, each of the
 * owner's live keys is announced as updated, which evicts it at every gateway as a
 * change of the key itself would.
 */
export function createOwnedKeyNotices (options: { keys: Pick<ApiKeysStore, 'liveOwnedBy'>, events: EventBus, clock: Clock }): OwnerGrantsChanged {
  const { keys, events, clock } = options
  return async (userIds) => {
    const at = new Date(clock.now()).toISOString()
    for (const keyId of keys.liveOwnedBy(userIds)) await events.publish({ type: 'key.updated', keyId, at })
  }
}

/** What an active owner grants the keys they own, as of now. */
export interface OwnerGrants {
  /** The union of the owner's roles' permissions: a key may do at most this. */
  permissions: string[]
  /** The owner's roles' traffic policies, which the key shares. */
  policies: GrantedPolicy[]
}

/** The owner's grants, or null when the owner is disabled (or gone): their keys are refused. */
export type OwnerGrantsOf = (userId: string) => OwnerGrants | null

/**
 * Reads, at each verification, what a key's owner lets it do: a key works only while
 * its owner is active, within the owner's current permissions (identity/services/api-keys.ts
 * intersects them with the key's own).
 */
export function createOwnerGrants (options: { users: Pick<UsersStore, 'byId' | 'permissionsOf'>, policiesOf: (userId: string) => GrantedPolicy[] }): OwnerGrantsOf {
  const { users, policiesOf } = options
  return (userId) => {
    const owner = users.byId(userId)
    if (owner === null || owner.disabledAt !== null) return null
    return { permissions: users.permissionsOf(userId), policies: policiesOf(userId) }
  }
}
