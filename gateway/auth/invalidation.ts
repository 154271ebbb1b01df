import type { FastifyBaseLogger } from 'fastify'
import type { EventBus } from '../../common/event-bus.js'
import type { AuthEvent } from '../../common/events.js'
import type { GatewayMetrics } from '../observability/metrics.js'
import type { ApiKeyVerifier } from './api-key-verifier.js'
import type { JwksCache } from './jwks-cache.js'
import type { KeyCacheL2 } from './key-cache-l2.js'
import type { TokenRevocations } from './token-revocations.js'

export interface InvalidationTargets {
  keys: Pick<ApiKeyVerifier, 'evict'>
  revocations: Pick<TokenRevocations, 'revokeSessions' | 'permissionsChanged'>
  jwks: Pick<JwksCache, 'refresh'>
  metrics: Pick<GatewayMetrics, 'invalidations'>
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
      break
    case 'user.enabled':
      // Nothing cached refuses an enabled user: tokens are issued afresh at login.
  }
}

/**
 * Subscribes to identity's invalidation events (Redis pub/sub in production, so every
 * replica hears every event). Returns the unsubscribe function.
 */
export async function subscribeToInvalidations (events: EventBus, targets: InvalidationTargets & { afterEvent?: (event: AuthEvent) => Promise<void> },
  onResubscribed?: () => void): Promise<() => Promise<void>> {
  return await events.subscribe((event) => {
    targets.metrics.invalidations.inc({ type: event.type })
    applyAuthEvent(event, targets).then(async () => await targets.afterEvent?.(event)).catch((err: unknown) => {
      targets.log.error({ err, eventType: event.type }, 'could not apply an invalidation event')
    })
  }, onResubscribed)
}

/** Prunes revocations that can no longer reject a live token. */
const PRUNE_INTERVAL_MS = 60_000

export interface CacheUpkeepOptions extends InvalidationTargets {
  events: EventBus
  revocations: Pick<TokenRevocations, 'revokeSessions' | 'permissionsChanged' | 'sync' | 'prune'>
  l2: Pick<KeyCacheL2, 'setAside'>
  /** Registers a callback for each return of Redis after an outage (a no-op without Redis). */
  onRedisBack: (listener: () => void) => void
  /** Longest wait for the subscription before start goes on without it (it completes when Redis answers). */
  subscribeWaitMs: number
  revocationSyncMs: number
  /** What else an event concerns, once the caches have applied it (open WebSockets). */
  afterEvent?: (event: AuthEvent) => Promise<void>
  /** What else is checked on each periodic sync of revocations. */
  afterSync?: () => Promise<void>
}

/**
 * What keeps the auth caches in step with identity: its events, a catch-up whenever
 * events may have been lost (the subscriber or Redis was away), and the periodic
 * re-read and pruning of revocations.
 */
export function createCacheUpkeep (options: CacheUpkeepOptions) {
  const { events, revocations, jwks, l2, log } = options
  const timers: NodeJS.Timeout[] = []
  let unsubscribe: (() => Promise<void>) | null = null

  /**
   * Events published while either connection was away were lost: revocations are read
   * again, and L2 is set aside until every entry has been dropped, so none outlives a
   * change it did not hear of. L1 entries expire on their own TTL, which bounds how
   * long a missed eviction can last.
   */
  function catchUp (what: string): void {
    log.info(`${what}: re-reading revocations and dropping L2 key entries that may have missed evictions`)
    void revocations.sync()
    l2.setAside()
  }

  return {
    /** Subscribes, loads keys and revocations, and starts the timers. Never throws: what fails is retried. */
    async start (): Promise<void> {
      const subscribed = subscribeToInvalidations(events, options, () => { catchUp('invalidation events are heard again') })
        .then((stop) => { unsubscribe = stop })
      await Promise.race([subscribed, new Promise((resolve) => setTimeout(resolve, options.subscribeWaitMs).unref())])
      options.onRedisBack(() => { catchUp('redis is back') })
      await Promise.all([jwks.refresh(), revocations.sync()])
      timers.push(setInterval(() => {
        void revocations.sync().then(async () => await options.afterSync?.()).catch((err: unknown) => {
          log.warn({ err }, 'could not check open WebSockets again')
        })
      }, options.revocationSyncMs).unref())
      timers.push(setInterval(() => { void revocations.prune() }, PRUNE_INTERVAL_MS).unref())
    },

    /** Stops the timers, then the subscription. */
    async stop (): Promise<void> {
      for (const timer of timers) clearInterval(timer)
      await unsubscribe?.()
    }
  }
}
