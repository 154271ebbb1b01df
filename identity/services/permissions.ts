/**
 * Permission strings are `resource:action`; `resource:*` grants every action on a
 * resource and `*` grants everything. The gateway checks grants with the same rules.
 */
export const PERMISSION_PATTERN = '^(\\*|[a-z][a-z0-9_-]{0,63}:(\\*|[a-z][a-z0-9_-]{0,63}))$'

/** Sorted, de-duplicated, so that stored sets compare equal regardless of input order. */
export function normalizePermissions (permissions: readonly string[]): string[] {
  return [...new Set(permissions)].sort()
}
