import type { GrantedPolicy } from '../../common/traffic/policy.js'
import type { RolesStore } from '../store/roles-store.js'
import type { UsersStore } from '../store/users-store.js'
import { rolePolicyGrants } from './traffic-policies.js'

/** What a user's roles grant: the permissions and traffic policies an access token carries. */
export interface UserGrants {
  permissions: string[]
  policies: GrantedPolicy[]
}

export type Grants = ReturnType<typeof createGrants>

/** Reads what users' roles grant, as of the call (tokens and key verdicts take it when issued). */
export function createGrants (options: { users: Pick<UsersStore, 'permissionsOf'>, roles: Pick<RolesStore, 'ofUser'> }) {
  const { users, roles } = options
  const policiesOf = (userId: string): GrantedPolicy[] => rolePolicyGrants(roles.ofUser(userId))
  return {
    policiesOf,
    of: (userId: string): UserGrants => ({ permissions: users.permissionsOf(userId), policies: policiesOf(userId) })
  }
}
