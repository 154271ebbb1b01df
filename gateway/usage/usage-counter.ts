import type { KeyOutcome, OutcomeCounts } from '../../common/internal-api.js'

const HOUR_MS = 3_600_000

/** What became of one secret's requests in one UTC hour (by this gateway's clock). */
export interface HourOutcomes extends OutcomeCounts {
  /** ms since the epoch, a whole hour. */
  start: number
}

/** The uses of one secret since it was last taken, the last of them, and the outcomes of its requests per hour. */
export interface SecretUsage {
  /** Requests let through; 0 when the secret was only refused since the last take (the last use is then meaningless). */
  count: number
  lastUsedAt: number
  route: string
  /** What Fastify's request.ip gave: undefined once the client's socket is gone. */
  ip: string | undefined
  /** The hour being counted. */
  hour: HourOutcomes
  /** Hours counted before it since the last take, oldest first; null while there are none. */
  earlier: HourOutcomes[] | null
}

export interface UsageCounterOptions {
  /** Most lookup ids held at once, those taken and not yet released included. */
  maxKeys: number
  now: () => number
}

const hourOf = (at: number): HourOutcomes =>
  ({ start: at - (at % HOUR_MS), allowed: 0, forbidden: 0, rate_limited: 0, quota_exhausted: 0, upstream_error: 0 })

/** The hour `at` falls in: the current one, or a new one once the clock has left it (the one left is kept in `earlier`). */
function hourAt (usage: SecretUsage, at: number): HourOutcomes {
  const { hour } = usage
  if (at >= hour.start && at < hour.start + HOUR_MS) return hour
  ;(usage.earlier ??= []).push(hour)
  usage.hour = hourOf(at)
  return usage.hour
}

/**
 * API key uses, and the outcomes of the requests of each key, counted per secret (its
 * lookup id) on the request path. `record` is what every request let through with a
 * key pays, `count` what a refused one does: a Map lookup, a comparison with the hour
 * and a few assignments, no promise, and allocations only the first time a lookup id is
 * seen since the last `take` (and once an hour for a lookup id still counting).
 *
 * Bounded: beyond `maxKeys` lookup ids, a new one's requests are not counted but added
 * to `overflow`, for the reporter to log and count. Taken uses keep their place against
 * the bound until released, so a report that identity has not acknowledged yet and the
 * uses counted meanwhile never hold more than `maxKeys` lookup ids together.
 */
export function createUsageCounter (options: UsageCounterOptions) {
  const { maxKeys, now } = options
  let pending = new Map<string, SecretUsage>()
  let held = 0
  let overflow = 0

  /** The lookup id's usage, a new one when there is room, or undefined (counted as overflow). */
  function usageOf (lookupId: string, at: number): SecretUsage | undefined {
    const usage = pending.get(lookupId)
    if (usage !== undefined) return usage
    if (pending.size + held >= maxKeys) {
      overflow++
      return undefined
    }
    const created: SecretUsage = { count: 0, lastUsedAt: at, route: '', ip: undefined, hour: hourOf(at), earlier: null }
    pending.set(lookupId, created)
    return created
  }

  return {
    /** A request let through with the secret: a use, and `allowed` in its hour. */
    record (lookupId: string, route: string, ip: string | undefined): void {
      const at = now()
      const usage = usageOf(lookupId, at)
      if (usage === undefined) return
      usage.count++
      usage.lastUsedAt = at
      usage.route = route
      usage.ip = ip
      hourAt(usage, at).allowed++
    },

    /** Another outcome of a request with the secret: refused (forbidden, rate_limited, quota_exhausted), or answered 5xx once let through. */
    count (lookupId: string, outcome: Exclude<KeyOutcome, 'allowed'>): void {
      const at = now()
      const usage = usageOf(lookupId, at)
      if (usage !== undefined) hourAt(usage, at)[outcome]++
    },

    /** Everything counted since the last take; its lookup ids hold their place until `release`. */
    take (): Map<string, SecretUsage> {
      const taken = pending
      pending = new Map()
      held += taken.size
      return taken
    },

    /** Gives back the place of `keys` taken lookup ids, once their report is done with. */
    release (keys: number): void {
      held = Math.max(0, held - keys)
    },

    /** Requests not counted for want of room since the last call. */
    takeOverflow (): number {
      const dropped = overflow
      overflow = 0
      return dropped
    },

    /** Lookup ids counted and not taken yet. */
    get size (): number { return pending.size }
  }
}

export type UsageCounter = ReturnType<typeof createUsageCounter>
