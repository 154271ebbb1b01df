/**
 * Key names are unique among all keys. A key its owner makes through /me/keys is
 * stored as `<owner user id>/<name>`: unique by construction across users, so a clash
 * can only be with one of the owner's own keys, and nobody learns from a refusal that
 * another user named a key alike. The owner sees `<name>`; operators see the whole
 * stored name. No other way of making a key may take a name in a user's namespace.
 */

const SEPARATOR = '/'
/** `usr_<id>/…`: a name that claims a user's namespace (user ids are `usr_` and base62). */
const USER_NAMESPACE = /^usr_[A-Za-z0-9_]*\//

/** The stored name of a key `ownerUserId` names `name` through self-service. */
export function namespacedKeyName (ownerUserId: string, name: string): string {
  return `${ownerUserId}${SEPARATOR}${name}`
}

/** The name a key's owner sees: its stored name without their namespace (other keys of theirs as stored). */
export function ownerKeyName (storedName: string, ownerUserId: string): string {
  const prefix = `${ownerUserId}${SEPARATOR}`
  return storedName.startsWith(prefix) ? storedName.slice(prefix.length) : storedName
}

/** The user id whose namespace `name` is in, or null for a name outside every user's namespace. */
export function userNamespaceOf (name: string): string | null {
  const match = USER_NAMESPACE.exec(name)
  return match === null ? null : match[0].slice(0, -SEPARATOR.length)
}
