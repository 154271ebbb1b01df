import type { CounterCheck, CounterResult } from '../../common/traffic/counter.js'
import type { QuotaPolicy } from '../../common/traffic/policy.js'

/**
 * The RateLimit-Policy and RateLimit fields of draft-ietf-httpapi-ratelimit-headers
 * (structured-field lists, one member per policy: `"name";q=100;w=10` and
 * `"name";r=42;t=3`), and the legacy X-RateLimit-* set for clients that read those.
 */

const PERIOD_SECONDS: Record<Exclude<QuotaPolicy['period'], 'month' | 'never'>, number> = { minute: 60, hour: 3_600, day: 86_400 }

/** `w` of a policy: its window, a quota's period (a month's length is the current one's), nothing for a quota that never refills. */
function windowOf (check: CounterCheck): number | null {
  const { policy } = check
  if (policy.kind === 'rate') return policy.window_seconds
  if (policy.period === 'never') return null
  if (policy.period === 'month') return Math.round((check.periodEnd - check.periodStart) / 1000)
  return PERIOD_SECONDS[policy.period]
}

// Policy names are lower-case letters, digits, `_`, `.` and `-`: a quoted sf-string needs no escaping.
const item = (check: CounterCheck): string => `"${check.policy.name}"`

export function rateLimitPolicyField (checks: readonly CounterCheck[]): string {
  return checks.map((check) => {
    const window = windowOf(check)
    return `${item(check)};q=${check.policy.limit}${window === null ? '' : `;w=${window}`}`
  }).join(', ')
}

/** A count and its result, as the fields below describe them. */
export interface CountedCheck { check: CounterCheck, result: CounterResult }

export function rateLimitField (counted: readonly CountedCheck[]): string {
  return counted.map(({ check, result }) => `${item(check)};r=${result.remaining};t=${result.resetSeconds}`).join(', ')
}

/** The legacy trio describes one policy: the one with the fewest units left (the first of those). */
export function legacyFields (counted: readonly CountedCheck[]): Record<string, string> {
  const [first, ...rest] = counted
  if (first === undefined) return {}
  const tightest = rest.reduce((least, next) => next.result.remaining < least.result.remaining ? next : least, first)
  return {
    'x-ratelimit-limit': String(tightest.check.policy.limit),
    'x-ratelimit-remaining': String(tightest.result.remaining),
    'x-ratelimit-reset': String(tightest.result.resetSeconds)
  }
}
