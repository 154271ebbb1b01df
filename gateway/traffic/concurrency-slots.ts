/**
 * Requests in flight per concurrency counter, in this process: a request takes a
 * slot of each of its counters, or none when one is full, and gives them back when
 * its answer is over (sent, or the client gone). Counts are per gateway process, as
 * the connections they protect are.
 */
export function createConcurrencySlots () {
  const inFlight = new Map<string, number>()

  return {
    /** The index of the first full counter, or -1 after taking a slot of each. */
    take (ids: readonly string[], limits: readonly number[]): number {
      for (let i = 0; i < ids.length; i++) {
        if ((inFlight.get(ids[i] as string) ?? 0) >= (limits[i] as number)) return i
      }
      for (const id of ids) inFlight.set(id, (inFlight.get(id) ?? 0) + 1)
      return -1
    },
    release (ids: readonly string[]): void {
      for (const id of ids) {
        const left = (inFlight.get(id) ?? 1) - 1
        if (left <= 0) inFlight.delete(id)
        else inFlight.set(id, left)
      }
    }
  }
}

export type ConcurrencySlots = ReturnType<typeof createConcurrencySlots>
