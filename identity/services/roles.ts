import type { EventBus } from '../../common/event-bus.js'
import { normalizePermissions } from '../../common/permissions.js'
import type { TrafficPolicy } from '../../common/traffic/policy.js'
import type { Db } from '../store/db.js'
import type { RolesStore, RoleRecord } from '../store/roles-store.js'
import { IdentityProblems } from '../errors.js'
import type { Clock } from './clock.js'
import type { OperatorGrantCheck } from './operator-grants.js'
import type { OwnerGrantsChanged } from './owned-keys.js'
import { checkedPolicies, requireRolePolicyRoom } from './traffic-policies.js'

export type Roles = ReturnType<typeof createRoles>

export interface RolesOptions {
  db: Db
  store: RolesStore
  events: EventBus
  clock: Clock
  /** Re-announces the keys of a role's holders when what the role grants changed. */
  ownerGrantsChanged: OwnerGrantsChanged
  /** Refuses operator permissions the acting operator does not hold. */
  operatorGrants: OperatorGrantCheck
}

const samePolicies = (a: readonly TrafficPolicy[], b: readonly TrafficPolicy[]): boolean => JSON.stringify(a) === JSON.stringify(b)

/** Roles map names to permission sets and traffic policies; users get the union of their roles' permissions and every role's policies. */
export function createRoles (options: RolesOptions) {
  const { db, store, events, clock } = options

  function get (name: string): RoleRecord {
    const role = store.get(name)
    if (role === null) throw IdentityProblems.roleNotFound([name])
    return role
  }

  return {
    get,
    list: () => store.list(),

    /**
     * Creates or replaces a role's permissions, and its traffic policies and self-service
     * key lifetime (days, null: the default) when given (absent: a new role has none, an
     * existing one keeps its own).
     */
    async set (name: string, permissions: string[], policies?: TrafficPolicy[], keyMaxLifetimeDays?: number | null): Promise<RoleRecord> {
      const given = policies !== undefined ? checkedPolicies(policies) : undefined
      options.operatorGrants(permissions)
      const { before, after, holders, permissionsChanged } = db.transaction(() => {
        const existing = store.get(name)
        const before = existing?.policies ?? []
        const after = given ?? before
        requireRolePolicyRoom(store.mostPoliciesBesides(name) + after.length, 'policies', `a holder of role ${name}`)
        const lifetime = keyMaxLifetimeDays !== undefined ? keyMaxLifetimeDays : existing?.keyMaxLifetimeDays ?? null
        store.upsert(name, { permissions: normalizePermissions(permissions), policies: after, keyMaxLifetimeDays: lifetime }, clock.now())
        const permissionsChanged = JSON.stringify(existing?.permissions ?? []) !== JSON.stringify(normalizePermissions(permissions))
        return { before, after, holders: store.usersWith(name), permissionsChanged }
      }).immediate()
      await events.publish({ type: 'role.changed', role: name, userIds: holders, at: new Date(clock.now()).toISOString() })
      // Holders' keys are bounded by their permissions and carry their policies (owned-keys.ts).
      if (permissionsChanged || !samePolicies(before, after)) await options.ownerGrantsChanged(holders)
      return get(name)
    },

    async remove (name: string): Promise<void> {
      get(name)
      if (store.usersWith(name).length > 0) throw IdentityProblems.roleInUse([name])
      store.remove(name)
      await events.publish({ type: 'role.changed', role: name, userIds: [], at: new Date(clock.now()).toISOString() })
    }
  }
}
