/** The uses of one secret since it was last taken, and the last of them. */
export interface SecretUsage {
  count: number
  lastUsedAt: number
  route: string
  /** What Fastify's request.ip gave: undefined once the client's socket is gone. */
  ip: string | undefined
}

export interface UsageCounterOptions {
  /** Most lookup ids held at once, those taken and not yet released included. */
  maxKeys: number
  now: () => number
}

/**
 * API key uses, counted per secret (its lookup id) on the request path. `record` is
 * what every request with a key pays: a Map lookup and a few assignments, no promise,
 * and an allocation only the first time a lookup id is seen since the last `take`.
 *
 * Bounded: beyond `maxKeys` lookup ids, a new one's uses are not counted but added to
 * `overflow`, for the reporter to log and count. Taken uses keep their place against
 * the bound until released, so a report that identity has not acknowledged yet and the
 * uses counted meanwhile never hold more than `maxKeys` lookup ids together.
 */
export function createUsageCounter (options: UsageCounterOptions) {
  const { maxKeys, now } = options
  let pending = new Map<string, SecretUsage>()
  let held = 0
  let overflow = 0

  return {
    record (lookupId: string, route: string, ip: string | undefined): void {
      const usage = pending.get(lookupId)
      if (usage !== undefined) {
        usage.count++
        usage.lastUsedAt = now()
        usage.route = route
        usage.ip = ip
        return
      }
      if (pending.size + held >= maxKeys) {
        overflow++
        return
      }
      pending.set(lookupId, { count: 1, lastUsedAt: now(), route, ip })
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

    /** Uses not counted for want of room since the last call. */
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
