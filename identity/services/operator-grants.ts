import { IdentityProblems } from '../errors.js'
import { currentAuditContext } from './audit-context.js'
import { EVERY_OPERATOR_PERMISSION, isOperatorPermission } from '../../common/operator-permissions.js'

/**
 * Refuses a change that would hand out an operator permission the acting operator does
 * not hold: without it, a holder of `admin:users` could give themselves a role with
 * `admin:*`, and a holder of `admin:roles` could put `admin:*` into a role they hold.
 * Handing out an account is handing out what it holds: setting the password of a user
 * (then logging in as them) or enabling a disabled one passes the same check over the
 * user's permissions, or `admin:users` could take over an `admin:*` operator's account.
 * Only people are bounded: the bootstrap admin token, the CLI (whoever may open the
 * file) and the system act with every permission.
 */
export type OperatorGrantCheck = (granted: readonly string[]) => void

export function createOperatorGrantCheck (permissionsOf: (userId: string) => readonly string[]): OperatorGrantCheck {
  return (granted) => {
    const { actor } = currentAuditContext()
    if (actor.type !== 'user' || actor.id === null) return
    const asked = [...new Set(granted.filter(isOperatorPermission))].sort()
    if (asked.length === 0) return
    const held = permissionsOf(actor.id)
    if (held.includes(EVERY_OPERATOR_PERMISSION)) return
    const beyond = asked.find((permission) => !held.includes(permission))
    if (beyond !== undefined) throw IdentityProblems.permissionNotHeld([beyond])
  }
}
