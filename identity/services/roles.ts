import type { EventBus } from '../../common/event-bus.js'
import { normalizePermissions } from '../../common/permissions.js'
import type { RolesStore, RoleRecord } from '../store/roles-store.js'
import { IdentityProblems } from '../errors.js'
import type { Clock } from './clock.js'

export type Roles = ReturnType<typeof createRoles>

/** Roles map names to permission sets; users get the union of their roles'. */
export function createRoles (options: { store: RolesStore, events: EventBus, clock: Clock }) {
  const { store, events, clock } = options

  function get (name: string): RoleRecord {
    const role = store.get(name)
    if (role === null) throw IdentityProblems.roleNotFound([name])
    return role
  }

  return {
    get,
    list: () => store.list(),

    /** Creates or replaces a role's permissions. */
    async set (name: string, permissions: string[]): Promise<RoleRecord> {
      store.upsert(name, normalizePermissions(permissions), clock.now())
      await events.publish({ type: 'role.changed', role: name, userIds: store.usersWith(name), at: new Date(clock.now()).toISOString() })
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
