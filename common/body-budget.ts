/**
 * An allowance of request-body bytes held in memory, shared by every request of a
 * listener (or of a gateway). Each request's body takes its share as it arrives and
 * gives it back when its answer is finished or its connection closes, whichever comes
 * first; a body that does not fit is refused rather than buffered. So however many
 * clients send bodies at once, and however slowly, the bytes a process holds for them
 * never exceed the capacity.
 */
export interface BodyBudget {
  readonly capacityBytes: number
  /** Bytes held right now, by every request together. */
  readonly usedBytes: number
  /** A share for one request's body, empty until it grows. */
  hold: () => BodyHolding
}

/** One request's share of a BodyBudget. */
export interface BodyHolding {
  /** Takes `bytes` more; false (and nothing taken) when the budget cannot spare them. */
  grow: (bytes: number) => boolean
  /** Gives the whole share back; later calls do nothing, and grow then fails. */
  release: () => void
}

export function createBodyBudget (capacityBytes: number): BodyBudget {
  if (!Number.isInteger(capacityBytes) || capacityBytes < 1) {
    throw new RangeError(`capacityBytes must be a positive integer, got ${String(capacityBytes)}`)
  }
  let used = 0
  return {
    capacityBytes,
    get usedBytes () { return used },
    hold () {
      let held = 0
      let released = false
      return {
        grow (bytes) {
          if (released || used + bytes > capacityBytes) return false
          used += bytes
          held += bytes
          return true
        },
        release () {
          if (released) return
          released = true
          used -= held
          held = 0
        }
      }
    }
  }
}
