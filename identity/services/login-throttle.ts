import { createAttemptBudget } from './attempt-budget.js'
import type { Clock } from './clock.js'
import { clientNetwork } from './client-network.js'

export interface LoginThrottleOptions {
  enabled: boolean
  maxFailuresPerEmail: number
  maxFailuresPerIp: number
  windowSeconds: number
  clock: Clock
}

/** The outcome of a reserved attempt, told back to the throttle once the password was checked. */
export interface LoginReservation {
  /** The password was wrong (or the e-mail unknown): the attempt stays counted. */
  failed: () => void
  /** The password was right: the e-mail's failures are cleared, the IP's attempt is given back. */
  succeeded: () => void
  /** The password was right but the login did not happen (a disabled user): not a failure. */
  released: () => void
}

export type LoginAttemptGrant = { allowed: true, reservation: LoginReservation } | { allowed: false, retryAfterSeconds: number }

export type LoginThrottle = ReturnType<typeof createLoginThrottle>

const UNTHROTTLED: LoginReservation = { failed () {}, succeeded () {}, released () {} }

/**
 * Counts login attempts per e-mail and per client IP (an IPv6 client by its /64) in fixed windows. An attempt is
 * counted (reserved) for both before its password is checked, so that N concurrent
 * attempts run at most the limit's worth of argon2 verifications, the rest being
 * refused at once; a success gives its attempt back. Once either count reaches its
 * limit, further attempts are refused until the window ends. State is per identity
 * process: identity is a single writer.
 */
export function createLoginThrottle (options: LoginThrottleOptions) {
  const windowMs = options.windowSeconds * 1000
  const emails = createAttemptBudget({ limit: options.maxFailuresPerEmail, windowMs, clock: options.clock })
  const ips = createAttemptBudget({ limit: options.maxFailuresPerIp, windowMs, clock: options.clock })

  return {
    /**
     * Either a reservation of one attempt for the e-mail and the IP (report its
     * outcome on it), or how long to wait. Synchronous: the check and the count
     * cannot be separated by another request.
     */
    attempt (email: string, address: string): LoginAttemptGrant {
      if (!options.enabled) return { allowed: true, reservation: UNTHROTTLED }
      // One bucket per IPv4 address or IPv6 /64 (see client-network.ts).
      const ip = clientNetwork(address)
      const retryAfterSeconds = Math.max(emails.retryAfterSeconds(email), ips.retryAfterSeconds(ip))
      if (retryAfterSeconds > 0) return { allowed: false, retryAfterSeconds }
      emails.take(email)
      ips.take(ip)
      let settled = false
      const settle = (fn: () => void) => () => {
        if (settled) return
        settled = true
        fn()
      }
      return {
        allowed: true,
        reservation: {
          failed: settle(() => {}),
          // A success clears the e-mail's failures, not the IP's (one IP may try many accounts).
          succeeded: settle(() => { emails.clear(email); ips.giveBack(ip) }),
          released: settle(() => { emails.giveBack(email); ips.giveBack(ip) })
        }
      }
    }
  }
}
