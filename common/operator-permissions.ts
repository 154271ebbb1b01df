import { CommonProblems, type PortierProblem } from './problem.js'

/**
 * Operator permissions: what lets a user's access token administer identity on the admin
 * listener. A family of their own, under the reserved `admin:` resource. Neither `*` nor
 * any upstream permission grants them, so a role made for upstream access can never
 * administer identity; `admin:*` grants the whole family (the demo's operator role).
 */
export const OPERATOR_PERMISSIONS = Object.freeze({
  /** Create, change, disable users; set their roles; reset passwords. */
  users: 'admin:users',
  /** Create, change, delete roles (permissions, policies, self-service key lifetime). */
  roles: 'admin:roles',
  /** Every key: create, change, rotate, revoke, disable; list; usage. */
  keys: 'admin:keys',
  /** List and revoke anyone's sessions. */
  sessions: 'admin:sessions',
  /** List and rotate signing keys. */
  signingKeys: 'admin:signing_keys',
  /** Read, export and verify the audit trail; its signed head. */
  audit: 'admin:audit'
} as const)

export type OperatorPermission = typeof OPERATOR_PERMISSIONS[keyof typeof OPERATOR_PERMISSIONS]

/** The reserved resource: a permission under it is an operator permission, whatever its action. */
export const OPERATOR_RESOURCE = 'admin'
export const EVERY_OPERATOR_PERMISSION = 'admin:*'

/** True when `permission` belongs to the operator family (granted or asked for). */
export function isOperatorPermission (permission: string): boolean {
  return permission.startsWith(`${OPERATOR_RESOURCE}:`)
}

/** True when `granted` holds `required` itself or `admin:*`; never through `*`. */
export function grantsOperator (granted: readonly string[], required: OperatorPermission): boolean {
  return granted.includes(required) || granted.includes(EVERY_OPERATOR_PERMISSION)
}

/**
 * The refusal of permissions asked for an API key that include an operator permission,
 * or null: a key never administers identity, however it is made (admin API, CLI, seed,
 * self-service). The admin listener takes no key anyway; this keeps the rule in the data.
 */
export function operatorPermissionOnKey (permissions: readonly string[]): PortierProblem | null {
  const operator = permissions.find(isOperatorPermission)
  return operator === undefined ? null : CommonProblems.validationFailed([`permissions: ${operator} is an operator permission; API keys never administer identity`])
}
