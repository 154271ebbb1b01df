/**
 * Permissions, as identity grants them and the gateway checks them. A permission is
 * `resource:action`; `resource:*` grants every action on a resource and `*` grants
 * everything. Both services read these rules from here only.
 */
export const PERMISSION_PATTERN = '^(\\*|[a-z][a-z0-9_-]{0,63}:(\\*|[a-z][a-z0-9_-]{0,63}))$'

/** Sorted, de-duplicated, so that stored sets compare equal regardless of input order. */
export function normalizePermissions (permissions: readonly string[]): string[] {
  return [...new Set(permissions)].sort()
}

/** The permissions any one of which allows `required`: itself, its resource's wildcard, and `*`. */
export function grantsOf (required: string): string[] {
  const colon = required.indexOf(':')
  return required === '*' ? ['*'] : colon > 0 ? [required, `${required.slice(0, colon)}:*`, '*'] : [required, '*']
}

/** True when `granted` allows `required`, with the `resource:*` and `*` wildcards. */
export function permits (granted: readonly string[], required: string): boolean {
  if (granted.includes(required) || granted.includes('*')) return true
  const colon = required.indexOf(':')
  return colon > 0 && granted.includes(`${required.slice(0, colon)}:*`)
}

/**
 * What both sets grant, as one set: each permission of either that the other permits
 * (`users:*` with `users:read` is `users:read`; `*` with anything is that thing),
 * normalised. Whatever the result permits, both sets permit, and the other way round.
 */
export function intersectPermissions (a: readonly string[], b: readonly string[]): string[] {
  return normalizePermissions([...a.filter((p) => permits(b, p)), ...b.filter((p) => permits(a, p))])
}
