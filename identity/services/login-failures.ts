import type { CounterCheck, CounterResult, CounterStore } from '../../common/traffic/counter.js'
import { createLocalCounters } from '../../common/traffic/local-counters.js'
import type { RatePolicy } from '../../common/traffic/policy.js'
import type { Clock } from './clock.js'

export interface LoginFailuresOptions {
  maxFailuresPerEmail: number
  maxFailuresPerIp: number
  windowSeconds: number
  clock: Clock
  /**
   * Where the failures are counted: Redis (common/traffic/redis-counters.ts, on identity's
   * clock), shared and kept across restarts; absent: in this process.
   */
  store?: CounterStore | undefined
  /** Where a lost Redis is said (once per outage). */
  log?: { warn: (msg: string) => void, info: (fields: Record<string, unknown>, msg: string) => void } | undefined
}

/** What a look found for one count: the failures' room, and when the oldest failure leaves the window. */
export interface FailureRoom { remaining: number, resetSeconds: number }

export interface LoginFailureRooms { email: FailureRoom, ip: FailureRoom }

export type LoginFailures = ReturnType<typeof createLoginFailures>

/**
 * Bytes of in-process counts: a failure costs 8 bytes, a name looked at ~160; the least
 * recently used name is forgotten beyond (a flood of distinct e-mails cannot grow memory).
 */
const LOCAL_MAX_BYTES = 16 * 1024 * 1024

/**
 * Failed logins per e-mail and per client network, counted by the traffic-control
 * engine (common/traffic/): each is a `rate` policy of `max failures` per window, an
 * exact sliding window. `look` takes nothing (cost 0), `record` takes one failure,
 * `clear` forgets an e-mail's failures.
 *
 * With a Redis store the counts are shared and survive a restart of identity; identity's
 * clock keeps the time (a single writer, whose tests move the clock). When Redis does not
 * answer, the failures are counted in this process instead (logged once): the throttle
 * never turns off and a login never fails for it. Once any were counted here, a look adds
 * both stores' failures, so those of an outage still count after it (until they leave
 * the window).
 */
export function createLoginFailures (options: LoginFailuresOptions) {
  const local = createLocalCounters({ now: options.clock.now, maxBytes: LOCAL_MAX_BYTES })
  const shared = options.store
  /** Failures were counted in process while Redis was lost: looks consult both stores. */
  let fellBack = false
  let redisLost = false

  const policy = (name: string, limit: number, partition: RatePolicy['partition']): RatePolicy =>
    ({ name, kind: 'rate', limit, window_seconds: options.windowSeconds, partition })
  const emailPolicy = policy('login-failures-email', options.maxFailuresPerEmail, 'user')
  const ipPolicy = policy('login-failures-ip', options.maxFailuresPerIp, 'ip')

  /** The limit and window are part of a count's id, as for the gateway's rate limits: a changed setting starts a new ring rather than misread the old one. */
  function check (name: string, countPolicy: RatePolicy, cost: number): CounterCheck {
    const id = `${name}|${countPolicy.limit}/${countPolicy.window_seconds}s`
    return { id, scope: 'login', tag: name, policy: countPolicy, cost, periodStart: 0, periodEnd: 0, seed: undefined }
  }
  const emailCheck = (email: string, cost: number): CounterCheck => check(`login|email|${email}`, emailPolicy, cost)
  const ipCheck = (network: string, cost: number): CounterCheck => check(`login|ip|${network}`, ipPolicy, cost)

  function lost (err: unknown): void {
    fellBack = true
    if (redisLost) return
    redisLost = true
    const reason = err instanceof Error ? `: ${err.message}` : ''
    options.log?.warn(`redis did not answer the login failure counts${reason}; counting them in this process until it does (the throttle stays on)`)
  }

  function answered (): void {
    if (!redisLost) return
    redisLost = false
    options.log?.info({}, 'redis answers the login failure counts again')
  }

  const roomOf = (result: CounterResult | undefined): FailureRoom =>
    ({ remaining: result?.remaining ?? 0, resetSeconds: result?.resetSeconds ?? options.windowSeconds })

  /**
   * Both stores' failures together: each failure is counted in exactly one of them. Room
   * frees when the oldest failure of either leaves the window (when both are over the
   * limit together, a later look may still find none: Retry-After then says so again).
   */
  function together (limit: number, a: FailureRoom, b: FailureRoom): FailureRoom {
    const failures = (limit - a.remaining) + (limit - b.remaining)
    const resets = [a, b].filter((room) => room.remaining < limit).map((room) => room.resetSeconds)
    return { remaining: Math.max(0, limit - failures), resetSeconds: resets.length > 0 ? Math.min(...resets) : 0 }
  }

  function localRooms (checks: readonly CounterCheck[]): LoginFailureRooms {
    const [email, ip] = local.take(checks)
    return { email: roomOf(email), ip: roomOf(ip) }
  }

  async function sharedRooms (store: CounterStore, checks: readonly CounterCheck[]): Promise<LoginFailureRooms> {
    let rooms: LoginFailureRooms
    try {
      const [email, ip] = await store.take(checks)
      answered()
      rooms = { email: roomOf(email), ip: roomOf(ip) }
    } catch (err) {
      lost(err)
      return localRooms(checks)
    }
    if (!fellBack) return rooms
    const here = localRooms(checks)
    return {
      email: together(options.maxFailuresPerEmail, rooms.email, here.email),
      ip: together(options.maxFailuresPerIp, rooms.ip, here.ip)
    }
  }

  async function recordOne (store: CounterStore, one: CounterCheck): Promise<void> {
    try {
      await store.take([one])
      answered()
    } catch (err) {
      lost(err)
      local.take([one])
    }
  }

  return {
    /** The room left for failures of the e-mail and of the network; synchronous without Redis. */
    look (email: string, network: string): LoginFailureRooms | Promise<LoginFailureRooms> {
      const checks = [emailCheck(email, 0), ipCheck(network, 0)]
      return shared === undefined ? localRooms(checks) : sharedRooms(shared, checks)
    },
    /** Counts one failure for both. Never rejects. */
    async record (email: string, network: string): Promise<void> {
      // One take each: a take is all or nothing, and one full count must not keep the other from counting.
      const checks = [emailCheck(email, 1), ipCheck(network, 1)]
      if (shared === undefined) {
        for (const one of checks) local.take([one])
        return
      }
      await Promise.all(checks.map(async (one) => { await recordOne(shared, one) }))
    },
    /** Forgets the e-mail's failures (a login succeeded); the network's stay. Never rejects. */
    async clear (email: string): Promise<void> {
      const checks = [emailCheck(email, 0)]
      local.forget(checks)
      if (shared === undefined) return
      try {
        await shared.forget(checks)
        answered()
      } catch (err) {
        // The failures stay counted in Redis until they leave the window: stricter, never looser.
        lost(err)
      }
    }
  }
}
