import { LRUCache } from 'lru-cache'
import type { Clock } from './clock.js'

/** Upper bound on tracked names (e-mails, IPs, lookup ids): a flood of distinct ones cannot grow memory. */
const DEFAULT_MAX_TRACKED = 100_000

export interface AttemptBudgetOptions {
  /** Attempts allowed per name within one window. */
  limit: number
  windowMs: number
  clock: Clock
  maxTracked?: number
}

interface Window { attempts: number, resetAt: number }

export type AttemptBudget = ReturnType<typeof createAttemptBudget>

/**
 * A fixed-window count of attempts per name, for checks that are expensive or that an
 * attacker repeats (a password, a legacy argon2 key hash). An attempt is taken BEFORE
 * the check runs, synchronously with the decision to run it: counting after the check
 * would let every attempt already in flight pass the limit (N concurrent attempts
 * would all run). A check that succeeds gives its attempt back. State is per process.
 */
export function createAttemptBudget (options: AttemptBudgetOptions) {
  const { clock, limit } = options
  const windows = new LRUCache<string, Window>({ max: options.maxTracked ?? DEFAULT_MAX_TRACKED })

  function current (name: string): Window | undefined {
    const window = windows.get(name)
    if (window !== undefined && window.resetAt <= clock.now()) {
      windows.delete(name)
      return undefined
    }
    return window
  }

  return {
    /** Seconds until `name` may be tried again, or 0 when an attempt remains. */
    retryAfterSeconds (name: string): number {
      const window = current(name)
      if (window === undefined || window.attempts < limit) return 0
      return Math.max(1, Math.ceil((window.resetAt - clock.now()) / 1000))
    },
    /** Counts one attempt; call it before the check, right after retryAfterSeconds said 0. */
    take (name: string): void {
      const window = current(name)
      if (window === undefined) windows.set(name, { attempts: 1, resetAt: clock.now() + options.windowMs })
      else window.attempts++
    },
    /** Gives one attempt back: the check it was taken for succeeded, so it was no failure. */
    giveBack (name: string): void {
      const window = current(name)
      if (window === undefined) return
      if (window.attempts <= 1) windows.delete(name)
      else window.attempts--
    },
    /** Forgets every attempt of `name`. */
    clear (name: string): void {
      windows.delete(name)
    }
  }
}
