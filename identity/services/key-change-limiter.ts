import type { CounterCheck, CounterResult, CounterStore } from '../../common/traffic/counter.js'
import { createLocalCounters } from '../../common/traffic/local-counters.js'
import type { RatePolicy } from '../../common/traffic/policy.js'
import type { Clock } from './clock.js'

export interface KeyChangeLimiterOptions {
  /** Key creations and rotations one user may make in any hour. */
  perHour: number
  clock: Clock
  /** Where the changes are counted: Redis (on identity's clock), shared by every identity process; absent: in this process. */
  store?: CounterStore | undefined
  /** Where a lost Redis is said (once per outage). */
  log?: { warn: (msg: string) => void, info: (fields: Record<string, unknown>, msg: string) => void } | undefined
}

export type KeyChangeLimiter = ReturnType<typeof createKeyChangeLimiter>

const WINDOW_SECONDS = 3_600
/** In-process counts: a user's window costs 8 bytes a change; the least recently used user is forgotten beyond. */
const LOCAL_MAX_BYTES = 4 * 1024 * 1024

/**
 * Self-service key changes (creations and rotations) per user, on the traffic-control
 * engine: a `rate` policy of `perHour` per hour, partitioned by user, an exact sliding
 * window. When Redis does not answer, the changes are counted in this process (said once
 * per outage): the limit never turns off and a change never fails for it.
 */
export function createKeyChangeLimiter (options: KeyChangeLimiterOptions) {
  const local = createLocalCounters({ now: options.clock.now, maxBytes: LOCAL_MAX_BYTES })
  const shared = options.store
  let redisLost = false
  const policy: RatePolicy = { name: 'self-service-key-changes', kind: 'rate', limit: options.perHour, window_seconds: WINDOW_SECONDS, partition: 'user' }

  /** The limit is part of the count's id, as for the gateway's rate limits: a changed setting starts a new ring rather than misread the old one. */
  const checkOf = (userId: string): CounterCheck => ({
    id: `key-changes|${userId}|${policy.limit}/${WINDOW_SECONDS}s`,
    scope: 'self-service',
    tag: `key-changes|${userId}`,
    policy,
    cost: 1,
    periodStart: 0,
    periodEnd: 0,
    seed: undefined
  })

  async function take (check: CounterCheck): Promise<CounterResult | undefined> {
    if (shared === undefined) return local.take([check])[0]
    try {
      const [result] = await shared.take([check])
      if (redisLost) {
        redisLost = false
        options.log?.info({}, 'redis answers the self-service key change counts again')
      }
      return result
    } catch (err) {
      if (!redisLost) {
        redisLost = true
        options.log?.warn(`redis did not answer the self-service key change counts${err instanceof Error ? `: ${err.message}` : ''}; counting them in this process until it does`)
      }
      return local.take([check])[0]
    }
  }

  return {
    /** Counts one change of the user's keys: 0 when it may go ahead, else the seconds until one may. */
    async take (userId: string): Promise<number> {
      const result = await take(checkOf(userId))
      // A store answers every check it is given.
      if (result === undefined) throw new Error('the key change count got no answer')
      if (result.allowed) return 0
      return Math.max(1, result.retryAfterSeconds)
    }
  }
}
