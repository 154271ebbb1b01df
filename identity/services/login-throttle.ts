import type { CounterStore } from '../../common/traffic/counter.js'
import { clientNetwork } from '../../common/client-network.js'
import type { Clock } from './clock.js'
import { createLoginFailures, type FailureRoom, type LoginFailureRooms, type LoginFailuresOptions } from './login-failures.js'
import { createRunningAttempts, type Watch } from './running-attempts.js'

export interface LoginThrottleOptions {
  enabled: boolean
  maxFailuresPerEmail: number
  maxFailuresPerIp: number
  windowSeconds: number
  clock: Clock
  /** Where failures are counted (Redis when identity has it: shared, restart-proof); absent: in this process. */
  store?: CounterStore
  log?: LoginFailuresOptions['log']
}

/**
 * An attempt let through: tell the throttle how it ended, exactly once (further calls are
 * ignored). Each resolves once the outcome is recorded, and never rejects.
 */
export interface LoginReservation {
  /** The password was wrong, the e-mail unknown, or the check itself failed. */
  failed: () => Promise<void>
  /** The password was right: the e-mail's failures are cleared (not the IP's: one IP may try many accounts). */
  succeeded: () => Promise<void>
  /** The password was right but no login happened (a disabled user): neither a failure nor a success. */
  released: () => Promise<void>
}

export type LoginAttemptGrant = { allowed: true, reservation: LoginReservation } | { allowed: false, retryAfterSeconds: number }

export type LoginThrottle = ReturnType<typeof createLoginThrottle>

const UNTHROTTLED: LoginReservation = { async failed () {}, async succeeded () {}, async released () {} }

/** Seconds until a full count has room again, or 0 when it has room. */
const retryOf = (room: FailureRoom): number => room.remaining > 0 ? 0 : Math.max(1, room.resetSeconds)

/**
 * Failed logins per e-mail and per client IP (an IPv6 client by its /64), with the
 * attempts still being checked. The failures are counted by the traffic-control engine
 * (login-failures.ts: a sliding window, in Redis when identity has it, so shared and kept
 * across restarts; in process otherwise); the running checks are this process's own
 * (running-attempts.ts). An attempt starts only while failures plus running checks stay
 * below both limits, and otherwise waits for a running one to end and looks again. N
 * concurrent wrong passwords thus run at most the limit's worth of argon2 verifications,
 * the rest answered 429 once those have failed, while concurrent right passwords all log
 * in. Once either count of failures reaches its limit, attempts are refused until its
 * oldest failure leaves the window.
 *
 * A look at Redis yields. That stays safe because an attempt records its failure before
 * it ends, and a look during which an attempt for the same e-mail or network ended is
 * made again: the room is then judged on current failures plus the running count, and
 * the start follows without yielding.
 */
export function createLoginThrottle (options: LoginThrottleOptions) {
  const failures = createLoginFailures(options)
  const emails = createRunningAttempts()
  const ips = createRunningAttempts()

  return {
    /** A reservation of one attempt for the e-mail and the IP, or how long to wait; may wait for running attempts to end. */
    async attempt (email: string, address: string): Promise<LoginAttemptGrant> {
      if (!options.enabled) return { allowed: true, reservation: UNTHROTTLED }
      const ip = clientNetwork(address)
      for (;;) {
        // A look at Redis yields: if an attempt for the e-mail or the network ended meanwhile, look again.
        const watches: Watch[] = [emails.watch(email), ips.watch(ip)]
        let rooms: LoginFailureRooms
        let endedMeanwhile = false
        try {
          const looked = failures.look(email, ip)
          rooms = looked instanceof Promise ? await looked : looked
        } finally {
          // Every watch is released, whatever the first says.
          endedMeanwhile = watches.map((watch) => watch.endedSince()).some(Boolean)
        }
        if (endedMeanwhile) continue
        // From here to the start (or the wait) nothing yields: no other attempt slips in between.
        const retryAfterSeconds = Math.max(retryOf(rooms.email), retryOf(rooms.ip))
        if (retryAfterSeconds > 0) return { allowed: false, retryAfterSeconds }
        const emailRoom = emails.count(email) < rooms.email.remaining
        const ipRoom = ips.count(ip) < rooms.ip.remaining
        if (emailRoom && ipRoom) break
        await Promise.race([...(emailRoom ? [] : [emails.ended(email)]), ...(ipRoom ? [] : [ips.ended(ip)])])
      }
      emails.start(email)
      ips.start(ip)
      let ended = false
      const end = (record: () => Promise<void>) => async (): Promise<void> => {
        if (ended) return
        ended = true
        try {
          // Recorded before the attempt stops counting as running: a look never misses it.
          await record()
        } finally {
          emails.end(email)
          ips.end(ip)
        }
      }
      return {
        allowed: true,
        reservation: {
          failed: end(async () => { await failures.record(email, ip) }),
          succeeded: end(async () => { await failures.clear(email) }),
          released: end(async () => {})
        }
      }
    }
  }
}
