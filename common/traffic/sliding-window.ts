/**
 * An exact sliding window: the times of the last `limit` units let through, oldest
 * first, in a ring. A request of cost c fits when the c-th oldest time has left the
 * window (the older ones have too); taking it overwrites those c times with now. So
 * no window of `windowMs` ever holds more than `limit` units, and a steady stream gets
 * exactly `limit` per window: what "100 per 10 s" says. O(cost) to take, O(log limit)
 * to count what is left.
 *
 * The ring grows as it is written (a slot never written reads as time 0, long gone),
 * so a partition that sends little costs little whatever its limit: 8 bytes per unit
 * it has taken, up to 8 bytes per unit of the limit. Redis keeps the same ring in a
 * string (common/traffic/redis-counters.ts), which grows alike, so both stores answer
 * alike.
 */
export class SlidingWindow {
  private times: Float64Array
  private head = 0

  constructor (readonly limit: number, readonly windowMs: number) {
    this.times = new Float64Array(Math.min(limit, 8))
  }

  /** Bytes the ring holds now. */
  get bytes (): number {
    return this.times.byteLength
  }

  private timeAt (offset: number): number {
    const slot = (this.head + offset) % this.limit
    return slot < this.times.length ? this.times[slot] as number : 0
  }

  private expired (offset: number, now: number): boolean {
    return this.timeAt(offset) + this.windowMs <= now
  }

  /** Whether `cost` units fit now (0 always does: a look that takes nothing). */
  fits (cost: number, now: number): boolean {
    return cost === 0 || (cost <= this.limit && this.expired(cost - 1, now))
  }

  /** Takes `cost` units at `now`; call only after `fits` said true. */
  take (cost: number, now: number): void {
    for (let i = 0; i < cost; i++) {
      const slot = (this.head + i) % this.limit
      if (slot >= this.times.length) this.grow(slot)
      this.times[slot] = now
    }
    this.head = (this.head + cost) % this.limit
  }

  private grow (slot: number): void {
    let length = this.times.length * 2
    while (length <= slot) length *= 2
    const grown = new Float64Array(Math.min(this.limit, length))
    grown.set(this.times)
    this.times = grown
  }

  /** Units free now: the ring's expired times, counted from the oldest (a binary search: they come first). */
  remaining (now: number): number {
    let low = 0
    let high = this.limit
    while (low < high) {
      const middle = (low + high) >>> 1
      if (this.expired(middle, now)) low = middle + 1
      else high = middle
    }
    return low
  }

  /** ms until the unit at `offset` from the oldest leaves the window (0 when it has). */
  msUntilFree (offset: number, now: number): number {
    return Math.max(0, this.timeAt(Math.min(offset, this.limit - 1)) + this.windowMs - now)
  }

  /** Whether every unit has left the window (the newest has): the ring can be forgotten. */
  idle (now: number): boolean {
    return this.expired(this.limit - 1, now)
  }
}
