import t from 'tap'
import { Counter, Registry } from 'prom-client'
import type { EventBus } from '../../../common/event-bus.js'
import type { AuthEvent } from '../../../common/events.js'
import { createCacheUpkeep } from '../../../gateway/auth/invalidation.js'
import { createMemoryRevocationShare } from '../../../gateway/auth/revocation-share.js'
import { createTokenRevocations } from '../../../gateway/auth/token-revocations.js'
import { fakeClock, settle, silentLog } from '../../helpers/auth-caches.js'

/**
 * What keeps the gateway's auth caches in step with identity: each event reaches the
 * cache it makes stale, and whenever events may have been lost (the subscriber heard
 * nothing for a while, or Redis was away) revocations are re-read and L2 is set aside.
 */

interface FakeBus extends EventBus {
  deliver: (event: AuthEvent) => void
  /** The subscriber heard events again after it could not. */
  resubscribed: () => void
  /** Completes the subscription (as when Redis answers). */
  subscribed: () => void
  unsubscribed: number
}

function fakeBus (): FakeBus {
  let listener: (event: AuthEvent) => void = () => {}
  let onResubscribed: () => void = () => {}
  let complete: () => void = () => {}
  const ready = new Promise<void>((resolve) => { complete = resolve })
  const bus: FakeBus = {
    unsubscribed: 0,
    async publish () {},
    async subscribe (l, r) {
      listener = l
      onResubscribed = r ?? (() => {})
      await ready
      return async () => { bus.unsubscribed++ }
    },
    receiving: () => true,
    async close () {},
    deliver: (event) => { listener(event) },
    resubscribed: () => { onResubscribed() },
    subscribed: () => { complete() }
  }
  return bus
}

function setup (options: { subscribeWaitMs?: number } = {}) {
  const clock = fakeClock()
  const events = fakeBus()
  const share = createMemoryRevocationShare()
  const feed = { asked: 0, async revokedSessionsSince () { feed.asked++; return [] } }
  const revocations = createTokenRevocations({ identity: feed, share, log: silentLog, now: clock.now })
  const evicted: string[] = []
  const calls = { jwksRefresh: 0, setAside: 0 }
  let redisBack: () => void = () => {}
  const invalidations = new Counter({ name: 'invalidations_total', help: 'test', labelNames: ['type'] as const, registers: [new Registry()] })
  const upkeep = createCacheUpkeep({
    events,
    keys: { evict: async (keyId) => { evicted.push(keyId) } },
    revocations,
    jwks: { refresh: async () => { calls.jwksRefresh++ } },
    l2: { setAside: () => { calls.setAside++ } },
    metrics: { invalidations },
    log: silentLog,
    onRedisBack: (listener) => { redisBack = listener },
    subscribeWaitMs: options.subscribeWaitMs ?? 1_000,
    revocationSyncMs: 3_600_000
  })
  return { clock, events, feed, revocations, evicted, calls, invalidations, upkeep, redisBack: () => { redisBack() } }
}

t.test('start loads the keys and revocations; events reach their caches', async (t) => {
  const s = setup()
  const starting = s.upkeep.start()
  s.events.subscribed()
  await starting
  t.equal(s.calls.jwksRefresh, 1, 'the JWKS is fetched')
  t.equal(s.feed.asked, 1, 'revocations are read from identity')

  const at = new Date(s.clock.now()).toISOString()
  s.events.deliver({ type: 'key.revoked', keyId: 'key_1', at })
  s.events.deliver({ type: 'session.revoked', sessionIds: ['sid_1'], userId: 'usr_1', reason: 'admin', at })
  s.events.deliver({ type: 'role.changed', role: 'reader', userIds: ['usr_2'], at })
  s.events.deliver({ type: 'signing_key.rotated', kid: 'kid_2', at })
  await settle()
  t.same(s.evicted, ['key_1'], 'key.revoked: the key is evicted')
  t.equal(s.revocations.check('sid_1', 'usr_1', 0), 'session_revoked', 'session.revoked: the session is refused')
  t.equal(s.revocations.check('sid_2', 'usr_2', Math.floor(s.clock.now() / 1000)), 'permissions_changed', 'role.changed: its users\' tokens are refused')
  t.equal(s.calls.jwksRefresh, 2, 'signing_key.rotated: the JWKS is fetched again')
  t.equal((await s.invalidations.get()).values.reduce((sum, v) => sum + v.value, 0), 4, 'every event counted')
  t.equal(s.calls.setAside, 0, 'nothing was missed: L2 stays in use')

  await s.upkeep.stop()
  t.equal(s.events.unsubscribed, 1, 'stop unsubscribes')
})

t.test('after events may have been lost: revocations re-read, L2 set aside', async (t) => {
  const s = setup()
  const starting = s.upkeep.start()
  s.events.subscribed()
  await starting
  s.events.resubscribed()
  t.equal(s.calls.setAside, 1, 'the subscriber hears again: L2 set aside')
  t.equal(s.feed.asked, 2, 'and revocations re-read')
  s.redisBack()
  t.equal(s.calls.setAside, 2, 'Redis is back: L2 set aside')
  t.equal(s.feed.asked, 3, 'and revocations re-read')
  await s.upkeep.stop()
})

t.test('a subscription that cannot complete (Redis down) does not hold the start', async (t) => {
  const s = setup({ subscribeWaitMs: 10 })
  // The upkeep's wait does not hold the process open (a gateway has its listeners for that); this test has nothing else.
  const alive = setInterval(() => {}, 1_000)
  t.teardown(() => { clearInterval(alive) })
  await s.upkeep.start()
  t.equal(s.calls.jwksRefresh, 1, 'started without it: the JWKS is fetched')
  s.events.subscribed()
  await settle()
  s.events.deliver({ type: 'key.disabled', keyId: 'key_1', at: new Date(s.clock.now()).toISOString() })
  await settle()
  t.same(s.evicted, ['key_1'], 'events are applied once the subscription completes')
  await s.upkeep.stop()
  t.equal(s.events.unsubscribed, 1, 'and stop ends it')
})
