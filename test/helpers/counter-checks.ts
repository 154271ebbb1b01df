import type { CounterCheck } from '../../common/traffic/counter.js'
import type { QuotaPolicy, RatePolicy } from '../../common/traffic/policy.js'

/** Counter checks as the gateway builds them, for the engine's own tests. */

/** A per-key rate limit `burst` of `limit` units in `windowSeconds`. */
export function rateCheck (id: string, limit: number, windowSeconds: number, cost = 1, tag = 'k:one'): CounterCheck {
  const policy: RatePolicy = { name: 'burst', kind: 'rate', limit, window_seconds: windowSeconds, partition: 'key' }
  return { id, scope: 'test', tag, policy, cost, periodStart: 0, periodEnd: 0, seed: undefined }
}

export interface QuotaCheckOptions { cost?: number, seed?: number, periodStart?: number, periodEnd?: number, tag?: string }

/** A daily quota `monthly` of `limit` units in the period around `now` unless given. */
export function quotaCheck (id: string, limit: number, now: number, options: QuotaCheckOptions = {}): CounterCheck {
  const policy: QuotaPolicy = { name: 'monthly', kind: 'quota', limit, period: 'day', partition: 'key' }
  return {
    id,
    scope: 'test',
    tag: options.tag ?? 'k:one',
    policy,
    cost: options.cost ?? 1,
    periodStart: options.periodStart ?? now - 60_000,
    periodEnd: options.periodEnd ?? now + 3_600_000,
    seed: options.seed
  }
}

/** The same check as a look: it takes nothing. */
export const lookAt = (check: CounterCheck): CounterCheck => ({ ...check, cost: 0 })
