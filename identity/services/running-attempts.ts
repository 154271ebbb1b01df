/**
 * The attempts still running per name (an e-mail, a client network, a key's lookup id):
 * checks that are expensive (argon2) and whose outcome is not known yet. A caller that
 * finds no room waits for one of them to end (`ended`) and then looks again.
 *
 * `watch` serves callers whose look at the failures is asynchronous (Redis): it tells
 * whether any attempt for the name ended while they looked. An attempt records its
 * failure before it ends, so a look during which nothing ended saw every failure
 * recorded before it, and what is still running is `count` (read at once, with no
 * yield before the start): the room and the start are judged on current data.
 *
 * State is per process (these are this process's checks) and bounded by the requests in
 * flight: a name is forgotten when nothing runs and nobody watches it.
 */

interface Running {
  inFlight: number
  /** Attempts that ended so far (a generation: compared across an asynchronous look). */
  ended: number
  /** Callers in the middle of a look: the entry stays while they do, so its generation does not restart. */
  watchers: number
  waiters: Array<() => void>
}

export interface Watch {
  /** Whether an attempt for the name ended since `watch`; releases the watch (call it once). */
  endedSince: () => boolean
}

export type RunningAttempts = ReturnType<typeof createRunningAttempts>

export function createRunningAttempts () {
  const running = new Map<string, Running>()

  function entryOf (name: string): Running {
    let entry = running.get(name)
    if (entry === undefined) {
      entry = { inFlight: 0, ended: 0, watchers: 0, waiters: [] }
      running.set(name, entry)
    }
    return entry
  }

  function prune (name: string, entry: Running): void {
    if (entry.inFlight <= 0 && entry.watchers <= 0 && running.get(name) === entry) running.delete(name)
  }

  return {
    /** Attempts running for `name`. */
    count (name: string): number {
      return running.get(name)?.inFlight ?? 0
    },
    /** Starts an attempt; call it right after a look said there is room, and `end` it whatever happens. */
    start (name: string): void {
      entryOf(name).inFlight++
    },
    /** Ends an attempt (its outcome already recorded) and wakes whoever waits on `name`. */
    end (name: string): void {
      const entry = running.get(name)
      if (entry === undefined || entry.inFlight <= 0) return
      entry.inFlight--
      entry.ended++
      const waiters = entry.waiters
      entry.waiters = []
      prune(name, entry)
      for (const wake of waiters) wake()
    },
    /** Resolves when one of the attempts running for `name` ends (at once when none runs). */
    async ended (name: string): Promise<void> {
      const entry = running.get(name)
      if (entry === undefined || entry.inFlight <= 0) return
      // Registered before this function first yields: no end between the caller's look and here is missed.
      await new Promise<void>((resolve) => { entry.waiters.push(resolve) })
    },
    /** Starts watching `name` for ended attempts, before an asynchronous look. */
    watch (name: string): Watch {
      const entry = entryOf(name)
      entry.watchers++
      const seen = entry.ended
      let released = false
      return {
        endedSince () {
          const changed = entry.ended !== seen
          if (!released) {
            released = true
            entry.watchers--
            prune(name, entry)
          }
          return changed
        }
      }
    }
  }
}
