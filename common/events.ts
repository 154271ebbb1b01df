/**
 * Invalidation events identity publishes whenever something that affects
 * authentication changes, so that every gateway can evict its caches at once.
 * The wire format is one JSON object per message on the configured channel.
 */
export type AuthEvent =
  | { type: 'key.revoked' | 'key.disabled' | 'key.enabled' | 'key.updated' | 'key.rotated', keyId: string, at: string }
  | { type: 'session.revoked', sessionIds: string[], userId: string, reason: string, at: string }
  | { type: 'user.disabled' | 'user.enabled' | 'user.roles_changed', userId: string, at: string }
  /** `userIds`: who held the role when it changed, so gateways can expire those users' tokens. */
  | { type: 'role.changed', role: string, userIds: string[], at: string }
  | { type: 'signing_key.rotated', kid: string, at: string }

export type AuthEventType = AuthEvent['type']

export const AUTH_EVENT_TYPES: readonly AuthEventType[] = [
  'key.revoked', 'key.disabled', 'key.enabled', 'key.updated', 'key.rotated',
  'session.revoked', 'user.disabled', 'user.enabled', 'user.roles_changed',
  'role.changed', 'signing_key.rotated'
]

/** Parses a message from the channel; anything that is not a known event is null. */
export function parseAuthEvent (message: string): AuthEvent | null {
  try {
    const value = JSON.parse(message) as { type?: unknown }
    if (typeof value !== 'object' || value === null) return null
    return AUTH_EVENT_TYPES.includes(value.type as AuthEventType) ? value as AuthEvent : null
  } catch {
    return null
  }
}
