import type { FastifyBaseLogger } from 'fastify'
import type { EventBus } from '../../common/event-bus.js'
import type { AuthEvent } from '../../common/events.js'
import type { GatewayMetrics } from '../observability/metrics.js'
import type { ApiKeyVerifier } from './api-key-verifier.js'
import type { JwksCache } from './jwks-cache.js'
import type { TokenRevocations } from './token-revocations.js'

export interface InvalidationTargets {
  keys: ApiKeyVerifier
  revocations: TokenRevocations
  jwks: JwksCache
  metrics: GatewayMetrics
  log: FastifyBaseLogger
}

/** Applies one identity event to the caches it makes stale. */
export async function applyAuthEvent (event: AuthEvent, targets: InvalidationTargets): Promise<void> {
  const at = Date.parse(event.at)
  switch (event.type) {
    case 'key.revoked':
    case 'key.disabled':
    case 'key.enabled':
    case 'key.updated':
    case 'key.rotated':
      await targets.keys.evict(event.keyId)
      return
    case 'session.revoked':
      await targets.revocations.revokeSessions(event.sessionIds, at)
      return
    case 'user.disabled':
    case 'user.roles_changed':
      // Identity also revokes a disabled user's sessions; refusing the user's older tokens covers a lost event.
      await targets.revocations.permissionsChanged([event.userId], at)
      return
    case 'role.changed':
      await targets.revocations.permissionsChanged(event.userIds ?? [], at)
      return
    case 'signing_key.rotated':
      await targets.jwks.refresh()
      return
    case 'user.enabled':
      // Nothing cached refuses an enabled user: tokens are issued afresh at login.
  }
}

/**
 * Subscribes to identity's invalidation events (Redis pub/sub in production, so every
 * replica hears every event). Returns the unsubscribe function.
 */
export async function subscribeToInvalidations (events: EventBus, targets: InvalidationTargets, onResubscribed?: () => void): Promise<() => Promise<void>> {
  return await events.subscribe((event) => {
    targets.metrics.invalidations.inc({ type: event.type })
    applyAuthEvent(event, targets).catch((err: unknown) => {
      targets.log.error({ err, eventType: event.type }, 'could not apply an invalidation event')
    })
  }, onResubscribed)
}
