import type { EventBus } from '../../common/event-bus.js'
import type { ApiKeysStore } from '../store/api-keys-store.js'
import type { Clock } from './clock.js'

/** Announces that the policies a user's roles grant changed; resolves once every event is published. */
export type OwnerPoliciesChanged = (userIds: readonly string[]) => Promise<void>

/**
 * A key's verdict carries its owner's roles' policies, and gateways cache verdicts by
 * key id: when those policies change (a role's, or which roles the owner holds), each
 * of the owners' keys is announced as updated, which evicts it as a change of the key
 * itself would.
 */
export function createOwnedKeyNotices (options: { keys: Pick<ApiKeysStore, 'liveOwnedBy'>, events: EventBus, clock: Clock }): OwnerPoliciesChanged {
  const { keys, events, clock } = options
  return async (userIds) => {
    const at = new Date(clock.now()).toISOString()
    for (const keyId of keys.liveOwnedBy(userIds)) await events.publish({ type: 'key.updated', keyId, at })
  }
}
