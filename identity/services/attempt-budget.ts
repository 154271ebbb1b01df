import { LRUCache } from 'lru-cache'
import type { Clock } from './clock.js'

/** Upper bound on names whose failures are remembered (e-mails, IPs, lookup ids): a flood of distinct ones cannot grow memory. */
const DEFAULT_MAX_TRACKED = 100_000

export interface AttemptBudgetOptions {
  /** Failures allowed per name within one window. */
  limit: number
  windowMs: number
  clock: Clock
  maxTracked?: number
}

/** How a started attempt ended. `neutral`: neither a failure nor a success (a right password on a disabled account). */
export type AttemptOutcome = 'failure' | 'success' | 'neutral'

interface Failures { count: number, resetAt: number }
interface Pending { inFlight: number, waiters: Array<() => void> }

export type AttemptBudget = ReturnType<typeof createAttemptBudget>

/**
 * A fixed-window count of failed attempts per name, for checks that are expensive or
 * that an attacker repeats (a password, a legacy argon2 key hash), which also counts
 * the attempts still running: a name may have at most `limit` failures and running
 * attempts together. Counting failures only once a check had failed let every attempt
 * already in flight pass the limit (N concurrent attempts all ran); refusing what is
 * in flight would refuse a burst of right passwords. So an attempt that finds the
 * budget full of running attempts waits for one of them to end (`ended`), then looks
 * again: N concurrent attempts run at most `limit` checks that fail, and right ones
 * all get through. The running counts are never evicted (they are bounded by the
 * requests in flight); the failures are an LRU. State is per process.
 */
export function createAttemptBudget (options: AttemptBudgetOptions) {
  const { clock, limit } = options
  const failures = new LRUCache<string, Failures>({ max: options.maxTracked ?? DEFAULT_MAX_TRACKED })
  const pending = new Map<string, Pending>()

  function failuresOf (name: string): Failures | undefined {
    const window = failures.get(name)
    if (window !== undefined && window.resetAt <= clock.now()) {
      failures.delete(name)
      return undefined
    }
    return window
  }

  return {
    /** Seconds until `name` may be tried again (its failures reached the limit), or 0. */
    retryAfterSeconds (name: string): number {
      const window = failuresOf(name)
      if (window === undefined || window.count < limit) return 0
      return Math.max(1, Math.ceil((window.resetAt - clock.now()) / 1000))
    },
    /** Whether one more attempt may start now: failures and running attempts stay within the limit. */
    hasRoom (name: string): boolean {
      return (failuresOf(name)?.count ?? 0) + (pending.get(name)?.inFlight ?? 0) < limit
    },
    /** Starts an attempt; call it right after hasRoom said true, and `end` it whatever happens. */
    start (name: string): void {
      const entry = pending.get(name)
      if (entry === undefined) pending.set(name, { inFlight: 1, waiters: [] })
      else entry.inFlight++
    },
    /** Ends an attempt: a failure is counted, a success clears the name's failures when `clearOnSuccess`. */
    end (name: string, outcome: AttemptOutcome, clearOnSuccess: boolean): void {
      if (outcome === 'failure') {
        const window = failuresOf(name)
        if (window === undefined) failures.set(name, { count: 1, resetAt: clock.now() + options.windowMs })
        else window.count++
      } else if (outcome === 'success' && clearOnSuccess) {
        failures.delete(name)
      }
      const entry = pending.get(name)
      if (entry === undefined) return
      entry.inFlight--
      const waiters = entry.waiters
      entry.waiters = []
      if (entry.inFlight <= 0) pending.delete(name)
      for (const wake of waiters) wake()
    },
    /** Resolves when one of the attempts running for `name` ends (at once when none runs). */
    async ended (name: string): Promise<void> {
      const entry = pending.get(name)
      if (entry === undefined) return
      await new Promise<void>((resolve) => { entry.waiters.push(resolve) })
    }
  }
}
