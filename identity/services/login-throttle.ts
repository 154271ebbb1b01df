import { createAttemptBudget, type AttemptOutcome } from './attempt-budget.js'
import type { Clock } from './clock.js'
import { clientNetwork } from '../../common/client-network.js'

export interface LoginThrottleOptions {
  enabled: boolean
  maxFailuresPerEmail: number
  maxFailuresPerIp: number
  windowSeconds: number
  clock: Clock
}

/** An attempt let through: tell the throttle how it ended, exactly once (further calls are ignored). */
export interface LoginReservation {
  /** The password was wrong, the e-mail unknown, or the check itself failed. */
  failed: () => void
  /** The password was right: the e-mail's failures are cleared (not the IP's: one IP may try many accounts). */
  succeeded: () => void
  /** The password was right but no login happened (a disabled user): neither a failure nor a success. */
  released: () => void
}

export type LoginAttemptGrant = { allowed: true, reservation: LoginReservation } | { allowed: false, retryAfterSeconds: number }

export type LoginThrottle = ReturnType<typeof createLoginThrottle>

const UNTHROTTLED: LoginReservation = { failed () {}, succeeded () {}, released () {} }

/**
 * Counts failed logins per e-mail and per client IP (an IPv6 client by its /64) in
 * fixed windows, together with the attempts still being checked: an attempt starts
 * only while failures and running checks stay within both limits, and otherwise waits
 * for a running one to end (see attempt-budget.ts). N concurrent wrong passwords thus
 * run at most the limit's worth of argon2 verifications, the rest answered 429 once
 * those have failed, while concurrent right passwords all log in. Once either count of
 * failures reaches its limit, further attempts are refused until the window ends.
 * State is per identity process: identity is a single writer.
 */
export function createLoginThrottle (options: LoginThrottleOptions) {
  const windowMs = options.windowSeconds * 1000
  const emails = createAttemptBudget({ limit: options.maxFailuresPerEmail, windowMs, clock: options.clock })
  const ips = createAttemptBudget({ limit: options.maxFailuresPerIp, windowMs, clock: options.clock })

  return {
    /** A reservation of one attempt for the e-mail and the IP, or how long to wait; may wait for running attempts to end. */
    async attempt (email: string, address: string): Promise<LoginAttemptGrant> {
      if (!options.enabled) return { allowed: true, reservation: UNTHROTTLED }
      const ip = clientNetwork(address)
      for (;;) {
        const retryAfterSeconds = Math.max(emails.retryAfterSeconds(email), ips.retryAfterSeconds(ip))
        if (retryAfterSeconds > 0) return { allowed: false, retryAfterSeconds }
        const emailRoom = emails.hasRoom(email)
        const ipRoom = ips.hasRoom(ip)
        if (emailRoom && ipRoom) break
        // Both checks and the start below run without yielding: no other attempt slips in between.
        await Promise.race([...(emailRoom ? [] : [emails.ended(email)]), ...(ipRoom ? [] : [ips.ended(ip)])])
      }
      emails.start(email)
      ips.start(ip)
      let ended = false
      const end = (outcome: AttemptOutcome) => () => {
        if (ended) return
        ended = true
        emails.end(email, outcome, true)
        ips.end(ip, outcome, false)
      }
      return { allowed: true, reservation: { failed: end('failure'), succeeded: end('success'), released: end('neutral') } }
    }
  }
}
