import { newId } from '../../common/random.js'
import type { EventBus } from '../../common/event-bus.js'
import type { Db } from '../store/db.js'
import type { RolesStore } from '../store/roles-store.js'
import type { UsersStore, UserRecord } from '../store/users-store.js'
import { IdentityProblems } from '../errors.js'
import type { Clock } from './clock.js'
import type { OperatorGrantCheck } from './operator-grants.js'
import type { OwnerGrantsChanged } from './owned-keys.js'
import type { PasswordHasher } from './password-hasher.js'
import type { Sessions } from './sessions.js'
import { requireRolePolicyRoom } from './traffic-policies.js'

export interface UsersOptions {
  db: Db
  store: UsersStore
  roles: RolesStore
  hasher: PasswordHasher
  sessions: Sessions
  events: EventBus
  clock: Clock
  /** Re-announces a user's keys when what they may do changed (roles, disabled or enabled). */
  ownerGrantsChanged: OwnerGrantsChanged
  /** Refuses roles carrying operator permissions the acting operator does not hold. */
  operatorGrants: OperatorGrantCheck
}

export type Users = ReturnType<typeof createUsers>

function isUniqueViolation (err: unknown): boolean {
  return (err as { code?: string }).code === 'SQLITE_CONSTRAINT_UNIQUE'
}

/** User accounts: creation, roles, password changes and disabling (admin API and CLI). */
export function createUsers (options: UsersOptions) {
  const { db, store, roles, hasher, sessions, events, clock } = options
  const at = (): string => new Date(clock.now()).toISOString()

  /**
   * The role names, once each and sorted, if every role exists, together they grant no
   * more policies than fit, and no operator permission the acting operator lacks.
   */
  function requireRoles (names: readonly string[]): string[] {
    const unique = [...new Set(names)].sort()
    let policies = 0
    const permissions: string[] = []
    for (const name of unique) {
      const role = roles.get(name)
      if (role === null) throw IdentityProblems.unknownRole([name])
      policies += role.policies.length
      permissions.push(...role.permissions)
    }
    requireRolePolicyRoom(policies, 'roles', 'the user')
    options.operatorGrants(permissions)
    return unique
  }

  function get (id: string): UserRecord {
    const user = store.byId(id)
    if (user === null) throw IdentityProblems.userNotFound([id])
    return user
  }

  return {
    get,
    list: () => store.list(),

    async create (input: { email: string, password: string, roles: string[] }): Promise<UserRecord> {
      const roleNames = requireRoles(input.roles)
      if (store.byEmail(input.email) !== null) throw IdentityProblems.emailTaken()
      const passwordHash = await hasher.hash(input.password)
      const id = newId('usr')
      try {
        db.transaction(() => { store.insert({ id, email: input.email, passwordHash, roles: roleNames }, clock.now()) })()
      } catch (err) {
        if (isUniqueViolation(err)) throw IdentityProblems.emailTaken()
        throw err
      }
      return get(id)
    },

    /** New roles apply to tokens issued from now on; gateways are told to re-check the user's tokens and keys. */
    async setRoles (id: string, roleNames: string[]): Promise<UserRecord> {
      get(id)
      const names = requireRoles(roleNames)
      db.transaction(() => { store.setRoles(id, names, clock.now()) })()
      await events.publish({ type: 'user.roles_changed', userId: id, at: at() })
      await options.ownerGrantsChanged([id])
      return get(id)
    },

    /** A password change ends every session of the user. */
    async changePassword (id: string, password: string): Promise<UserRecord> {
      get(id)
      // Whoever sets the password may log in as the user: their account is handed out.
      options.operatorGrants(store.permissionsOf(id))
      const passwordHash = await hasher.hash(password)
      await sessions.revokeAllOfUser(id, 'password_changed', () => { store.setPassword(id, passwordHash, clock.now()) })
      return get(id)
    },

    /** Used at login when the configured argon2 parameters have grown. */
    rehash: async (id: string, password: string): Promise<void> => {
      store.setPassword(id, await hasher.hash(password), get(id).passwordChangedAt)
    },

    /** Disabling ends every session of the user and stops their keys; enabling lets them log in, and their keys work, again. */
    async setDisabled (id: string, disabled: boolean): Promise<UserRecord> {
      const user = get(id)
      if ((user.disabledAt !== null) === disabled) return user
      // Enabling hands the user's permissions out again.
      if (!disabled) options.operatorGrants(store.permissionsOf(id))
      const change = (): void => { store.setDisabled(id, disabled ? clock.now() : null, clock.now()) }
      if (disabled) await sessions.revokeAllOfUser(id, 'user_disabled', change)
      else change()
      await events.publish({ type: disabled ? 'user.disabled' : 'user.enabled', userId: id, at: at() })
      // The user's keys work only while the user is active.
      await options.ownerGrantsChanged([id])
      return get(id)
    }
  }
}
