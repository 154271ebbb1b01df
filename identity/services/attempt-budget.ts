import { LRUCache } from 'lru-cache'
import type { Clock } from './clock.js'
import { createRunningAttempts } from './running-attempts.js'

/** Upper bound on names whose failures are remembered (lookup ids): a flood of distinct ones cannot grow memory. */
const DEFAULT_MAX_TRACKED = 100_000

export interface AttemptBudgetOptions {
  /** Failures allowed per name within one window. */
  limit: number
  windowMs: number
  clock: Clock
  maxTracked?: number
}

/** How a started attempt ended. */
export type AttemptOutcome = 'failure' | 'success'

interface Failures { count: number, resetAt: number }

export type AttemptBudget = ReturnType<typeof createAttemptBudget>

/**
 * An in-process, fixed-window count of failed attempts per name, together with the
 * attempts still running (running-attempts.ts): a name may have at most `limit`
 * failures and running attempts together. What API keys stored as argon2id by an
 * earlier version use (api-keys.ts), so that wrong secrets for one lookup id run at
 * most `limit` argon2 checks. (Logins count their failures on the traffic-control
 * engine instead: login-throttle.ts.) Counting failures only once a check had failed
 * let every attempt already in flight pass the limit; refusing what is in flight would
 * refuse a burst of right secrets. So an attempt that finds the budget full of running
 * attempts waits for one of them to end (`ended`), then looks again. The failures are
 * an LRU; state is per process.
 */
export function createAttemptBudget (options: AttemptBudgetOptions) {
  const { clock, limit } = options
  const failures = new LRUCache<string, Failures>({ max: options.maxTracked ?? DEFAULT_MAX_TRACKED })
  const running = createRunningAttempts()

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
      return (failuresOf(name)?.count ?? 0) + running.count(name) < limit
    },
    /** Starts an attempt; call it right after hasRoom said true, and `end` it whatever happens. */
    start (name: string): void {
      running.start(name)
    },
    /** Ends an attempt: a failure is counted, a success clears the name's failures when `clearOnSuccess`. */
    end (name: string, outcome: AttemptOutcome, clearOnSuccess: boolean): void {
      if (outcome === 'failure') {
        const window = failuresOf(name)
        if (window === undefined) failures.set(name, { count: 1, resetAt: clock.now() + options.windowMs })
        else window.count++
      } else if (clearOnSuccess) {
        failures.delete(name)
      }
      running.end(name)
    },
    /** Resolves when one of the attempts running for `name` ends (at once when none runs). */
    async ended (name: string): Promise<void> {
      await running.ended(name)
    }
  }
}
