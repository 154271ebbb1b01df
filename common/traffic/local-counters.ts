import { LRUCache } from 'lru-cache'
import { ceilSeconds, SeedNeededError, type CounterCheck, type CounterResult, type SyncCounterStore } from './counter.js'
import { SlidingWindow } from './sliding-window.js'

/** A quota's count in its current period. */
interface QuotaCount { periodStart: number, used: number }
type Count = SlidingWindow | QuotaCount

export interface LocalCountersOptions {
  now?: () => number
  /**
   * Bytes of counts held (a window costs 8 bytes per unit it took, up to its limit); the least
   * recently used partition is forgotten beyond, so a flood of distinct clients cannot
   * grow memory. A forgotten partition starts again from zero.
   */
  maxBytes?: number
}

const DEFAULT_MAX_BYTES = 64 * 1024 * 1024
const QUOTA_BYTES = 64
const WINDOW_BYTES = 96

/**
 * Counts kept in this process: what a gateway without Redis enforces, and what one
 * with Redis falls back to, per policy, while Redis is lost. Checks and takes run in
 * one synchronous pass, so they are atomic here.
 */
export function createLocalCounters (options: LocalCountersOptions = {}): SyncCounterStore & { size: () => number } {
  const now = options.now ?? Date.now
  const counts = new LRUCache<string, Count>({
    maxSize: options.maxBytes ?? DEFAULT_MAX_BYTES,
    sizeCalculation: (count) => count instanceof SlidingWindow ? WINDOW_BYTES + count.bytes : QUOTA_BYTES
  })

  function windowOf (check: CounterCheck): SlidingWindow {
    const found = counts.get(check.id)
    if (found instanceof SlidingWindow && found.limit === check.policy.limit) return found
    const policy = check.policy as { limit: number, window_seconds: number }
    const created = new SlidingWindow(policy.limit, policy.window_seconds * 1000)
    counts.set(check.id, created)
    return created
  }

  function quotaOf (check: CounterCheck): QuotaCount | null {
    const found = counts.get(check.id)
    if (found !== undefined && !(found instanceof SlidingWindow) && found.periodStart === check.periodStart) return found
    if (check.seed === undefined) return null
    const created = { periodStart: check.periodStart, used: check.seed }
    counts.set(check.id, created)
    return created
  }

  return {
    size: () => counts.size,
    forget (checks) {
      for (const check of checks) counts.delete(check.id)
    },
    take (checks) {
      const at = now()
      const state: Count[] = []
      const fits: boolean[] = []
      const unseeded: CounterCheck[] = []
      for (const check of checks) {
        if (check.policy.kind === 'rate') {
          const window = windowOf(check)
          state.push(window)
          fits.push(window.fits(check.cost, at))
        } else {
          const quota = quotaOf(check)
          if (quota === null) { unseeded.push(check); continue }
          state.push(quota)
          fits.push(quota.used + check.cost <= check.policy.limit)
        }
      }
      if (unseeded.length > 0) throw new SeedNeededError(unseeded)
      const all = fits.every(Boolean)
      return checks.map((check, i): CounterResult => {
        const count = state[i] as Count
        if (count instanceof SlidingWindow) {
          if (all) {
            const before = count.bytes
            count.take(check.cost, at)
            // Set again when the ring grew: the cache weighs an entry when it is set.
            if (count.bytes !== before) counts.set(check.id, count)
          }
          const remaining = count.remaining(at)
          return {
            allowed: all,
            remaining,
            resetSeconds: ceilSeconds(count.msUntilFree(remaining, at)),
            retryAfterSeconds: fits[i] === true ? 0 : retryOf(check, count.msUntilFree(check.cost - 1, at))
          }
        }
        if (all) count.used += check.cost
        const left = Math.max(0, check.policy.limit - count.used)
        return {
          allowed: all,
          remaining: left,
          resetSeconds: ceilSeconds(check.periodEnd - at),
          retryAfterSeconds: fits[i] === true ? 0 : ceilSeconds(check.periodEnd - at, 1)
        }
      })
    }
  }
}

/** A cost above the limit never fits: say so with the window's length, never 0. */
function retryOf (check: CounterCheck, ms: number): number {
  const window = (check.policy as { window_seconds?: number }).window_seconds ?? 1
  return check.cost > check.policy.limit ? window : ceilSeconds(ms, 1)
}
