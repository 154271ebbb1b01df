import { grantsOperator, OPERATOR_PERMISSIONS, type OperatorPermission } from '../../common/operator-permissions.js'
import { BASE } from '../base-path.js'

/**
 * The operator pages and the operator permission each needs: the same permissions the
 * admin API checks on every call. A user sees a page's link, and may open it, only while
 * their roles grant it; identity still decides every call made from the page.
 */
export const OPERATOR_SECTIONS = Object.freeze([
  { id: 'overview', label: 'Overview', path: `${BASE}/operator`, permission: OPERATOR_PERMISSIONS.keys },
  { id: 'users', label: 'Users', path: `${BASE}/operator/users`, permission: OPERATOR_PERMISSIONS.users },
  { id: 'roles', label: 'Roles', path: `${BASE}/operator/roles`, permission: OPERATOR_PERMISSIONS.roles },
  { id: 'keys', label: 'All keys', path: `${BASE}/operator/keys`, permission: OPERATOR_PERMISSIONS.keys },
  { id: 'audit', label: 'Audit', path: `${BASE}/operator/audit`, permission: OPERATOR_PERMISSIONS.audit }
] as const)

export type OperatorSection = typeof OPERATOR_SECTIONS[number]
export type OperatorSectionId = OperatorSection['id']

/** The operator sections a user's current permissions open, in the navigation's order. */
export function sectionsOf (permissions: readonly string[]): OperatorSection[] {
  return OPERATOR_SECTIONS.filter((section) => grantsOperator(permissions, section.permission))
}

export function sectionById (id: OperatorSectionId): OperatorSection {
  return OPERATOR_SECTIONS.find((section) => section.id === id) as OperatorSection
}

export type { OperatorPermission }
