/** Time source in milliseconds; tests pass a fake one instead of sleeping. */
export interface Clock {
  now: () => number
}

export const systemClock: Clock = { now: () => Date.now() }
