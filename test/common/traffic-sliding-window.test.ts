import t from 'tap'
import { SlidingWindow } from '../../common/traffic/sliding-window.js'
import { seededRandom } from '../helpers/seeded-random.js'

/**
 * The exact sliding window behind every rate policy: at most `limit` units in any
 * `windowMs`, a unit taken at t counting until t + windowMs (free at that instant,
 * not before), all checked against a brute-force log of every unit taken.
 */

/** A realistic clock: the ring's empty slots read as time 0, long gone from any window. */
const T0 = Date.UTC(2024, 4, 1, 12)

/** Every unit taken, by time: what the window must agree with, counted the slow way. */
class Model {
  readonly log: number[] = []
  constructor (readonly limit: number, readonly windowMs: number) {}

  /** Units counted at `now`: taken within (now - windowMs, now]. */
  inWindow (now: number): number {
    let count = 0
    for (let i = this.log.length - 1; i >= 0; i--) {
      const taken = this.log[i] as number
      if (taken <= now - this.windowMs) break // the log is in time order
      if (taken <= now) count++
    }
    return count
  }

  remaining (now: number): number { return this.limit - this.inWindow(now) }

  fits (cost: number, now: number): boolean {
    return cost === 0 || (cost <= this.limit && this.remaining(now) >= cost)
  }

  take (cost: number, now: number): void {
    for (let i = 0; i < cost; i++) this.log.push(now)
  }

  /** The least wait after which `cost` units are free (nothing more taken), found by trying every instant a unit leaves. */
  msUntilFits (cost: number, now: number): number {
    if (cost > this.limit) return Infinity
    const candidates = [0]
    for (let i = this.log.length - 1; i >= 0; i--) {
      const leaves = (this.log[i] as number) + this.windowMs - now
      if (leaves <= 0) break
      candidates.push(leaves)
    }
    candidates.sort((a, b) => a - b)
    for (const wait of candidates) if (this.remaining(now + wait) >= cost) return wait
    return Infinity
  }
}

/** The most units the log holds in any half-open span of `windowMs` (what a window may hold). */
function busiestWindow (log: readonly number[], windowMs: number): number {
  let most = 0
  let end = 0
  for (let start = 0; start < log.length; start++) {
    while (end < log.length && (log[end] as number) < (log[start] as number) + windowMs) end++
    most = Math.max(most, end - start)
  }
  return most
}

t.test('a burst: exactly limit units fit, the next is refused', async (t) => {
  for (const limit of [1, 3, 100]) {
    const w = new SlidingWindow(limit, 10_000)
    t.equal(w.remaining(T0), limit, `${limit}: all free at first`)
    t.ok(w.idle(T0), `${limit}: idle at first`)
    let fitted = 0
    for (let i = 0; i < limit; i++) {
      if (!w.fits(1, T0)) break
      w.take(1, T0)
      fitted++
      if (limit <= 3) t.equal(w.remaining(T0), limit - i - 1, `${limit}: ${limit - i - 1} left after ${i + 1}`)
    }
    t.equal(fitted, limit, `${limit}: every unit of the burst fit`)
    t.equal(w.remaining(T0), 0, `${limit}: none left`)
    t.notOk(w.fits(1, T0), `${limit}: unit ${limit + 1} refused`)
    t.notOk(w.idle(T0), `${limit}: not idle`)
    t.equal(w.msUntilFree(0, T0), 10_000, `${limit}: the oldest frees after the whole window`)
  }
})

t.test('units free one by one as each leaves the window, at t + window exactly', async (t) => {
  const windowMs = 1_000
  const w = new SlidingWindow(3, windowMs)
  const times = [T0, T0 + 100, T0 + 250]
  for (const at of times) { t.ok(w.fits(1, at)); w.take(1, at) }
  t.notOk(w.fits(1, T0 + 999), 'full 1 ms before the oldest leaves')
  t.equal(w.remaining(T0 + 999), 0)
  t.equal(w.msUntilFree(0, T0 + 999), 1, 'the oldest frees in 1 ms')

  t.equal(w.remaining(T0 + 1_000), 1, 'the unit taken at T0 is free at T0 + window')
  t.ok(w.fits(1, T0 + 1_000))
  t.notOk(w.fits(2, T0 + 1_000), 'but only that one')
  t.equal(w.msUntilFree(1, T0 + 1_000), 100, 'the second frees 100 ms later')

  t.equal(w.remaining(T0 + 1_099), 1, 'the unit taken at T0 + 100 still counts at T0 + 1099')
  t.equal(w.remaining(T0 + 1_100), 2, '… and is free at T0 + 1100')
  t.equal(w.remaining(T0 + 1_249), 2)
  t.equal(w.remaining(T0 + 1_250), 3, 'all free once the newest has left')
  t.ok(w.idle(T0 + 1_250))
  t.notOk(w.idle(T0 + 1_249), 'not idle while the newest counts')

  // A unit taken as the oldest leaves replaces it: the window is full again until T0 + 1100.
  t.ok(w.fits(1, T0 + 1_250))
  w.take(1, T0 + 1_250)
  t.equal(w.remaining(T0 + 1_250), 2, 'the new unit counts')
  t.equal(w.remaining(T0 + 2_249), 2, 'until T0 + 2249')
  t.equal(w.remaining(T0 + 2_250), 3, 'and is free at T0 + 2250')
})

t.test('cost > 1 takes several and needs that many free; cost > limit never fits', async (t) => {
  const w = new SlidingWindow(5, 10_000)
  t.ok(w.fits(5, T0), 'the whole limit at once fits')
  t.notOk(w.fits(6, T0), 'more than the limit never fits')
  w.take(3, T0)
  t.equal(w.remaining(T0), 2, 'cost 3 took 3')
  t.ok(w.fits(2, T0 + 1))
  t.notOk(w.fits(3, T0 + 1), '3 do not fit when 2 are free')
  w.take(2, T0 + 1_000)
  t.equal(w.remaining(T0 + 1_000), 0)
  t.notOk(w.fits(1, T0 + 9_999))
  t.equal(w.remaining(T0 + 10_000), 3, 'the three taken together free together')
  t.ok(w.fits(3, T0 + 10_000))
  t.notOk(w.fits(4, T0 + 10_000), '4 need the units taken at T0 + 1000 too')
  t.equal(w.msUntilFree(3, T0 + 10_000), 1_000, 'the 4th oldest frees at T0 + 11000')
  t.ok(w.fits(4, T0 + 11_000))
  t.ok(w.fits(5, T0 + 11_000))
  t.notOk(w.fits(6, T0 + 1_000_000), 'cost > limit never fits, however long one waits')
  t.notOk(w.fits(100, T0 + 1_000_000))
})

t.test('cost 0 always fits and takes nothing', async (t) => {
  const w = new SlidingWindow(2, 10_000)
  t.ok(w.fits(0, T0))
  w.take(0, T0)
  t.equal(w.remaining(T0), 2, 'a look took nothing')
  w.take(2, T0)
  t.ok(w.fits(0, T0), 'a look fits a full window')
  w.take(0, T0 + 5)
  t.equal(w.remaining(T0 + 5), 0)
  t.equal(w.remaining(T0 + 10_000), 2, 'and moved nothing: both free at T0 + window')
  t.equal(w.msUntilFree(0, T0 + 5), 9_995)
})

t.test('random operations agree with a brute-force log; no window ever holds more than limit', async (t) => {
  const configs: Array<{ limit: number, windowMs: number, seed: number, ops: number }> = [
    { limit: 1, windowMs: 1_000, seed: 1, ops: 2_000 },
    { limit: 7, windowMs: 1_000, seed: 2, ops: 3_000 },
    { limit: 20, windowMs: 10_000, seed: 3, ops: 3_000 },
    { limit: 64, windowMs: 5_000, seed: 4, ops: 2_000 }
  ]
  for (const { limit, windowMs, seed, ops } of configs) {
    const random = seededRandom(seed)
    const int = (n: number): number => Math.floor(random() * n)
    const w = new SlidingWindow(limit, windowMs)
    const model = new Model(limit, windowMs)
    let now = T0
    let mismatches = 0
    let taken = 0
    let refused = 0
    const mismatch = (what: string, got: unknown, want: unknown): void => {
      if (mismatches++ < 5) t.fail(`limit ${limit}, seed ${seed}, t=${now - T0}: ${what}: ${String(got)}, model ${String(want)}`)
    }
    for (let op = 0; op < ops; op++) {
      const step = random()
      if (step < 0.3) {
        // no time passes: bursts
      } else if (step < 0.7) {
        now += int(Math.ceil(windowMs / limit))
      } else if (step < 0.85) {
        now += int(windowMs)
      } else if (step < 0.95 && model.log.length > 0) {
        // jump to the exact instant (or 1 ms before) a counted unit leaves
        const unit = model.log[model.log.length - 1 - int(Math.min(limit, model.log.length))] as number
        now = Math.max(now, unit + windowMs - int(2))
      } else {
        now += windowMs + int(windowMs)
      }
      const cost = random() < 0.1 ? 0 : random() < 0.1 ? limit + 1 + int(3) : 1 + int(Math.min(limit, Math.max(4, limit / 4)))
      const fits = w.fits(cost, now)
      if (fits !== model.fits(cost, now)) mismatch(`fits(${cost})`, fits, model.fits(cost, now))
      if (fits) {
        w.take(cost, now)
        model.take(cost, now)
        if (cost > 0) taken++
      } else {
        refused++
      }
      const remaining = w.remaining(now)
      if (remaining !== model.remaining(now)) mismatch('remaining', remaining, model.remaining(now))
      if (w.idle(now) !== (model.inWindow(now) === 0)) mismatch('idle', w.idle(now), model.inWindow(now) === 0)
      // ms until `offset + 1` units are free, for every offset (and the reset: until one more is free)
      for (let offset = 0; offset < limit; offset += limit > 8 ? 1 + int(limit / 4) : 1) {
        const got = w.msUntilFree(offset, now)
        const want = model.msUntilFits(offset + 1, now)
        if (got !== want) mismatch(`msUntilFree(${offset})`, got, want)
      }
      if (remaining < limit) {
        const reset = w.msUntilFree(remaining, now)
        if (reset <= 0 || model.remaining(now + reset) <= remaining || model.remaining(now + reset - 1) !== remaining) {
          mismatch('reset (ms until one more unit is free)', reset, model.msUntilFits(remaining + 1, now))
        }
      }
    }
    t.equal(mismatches, 0, `limit ${limit}, window ${windowMs} ms, seed ${seed}: ${ops} operations agree with the model`)
    t.ok(taken > ops / 10 && refused > ops / 20, `both outcomes were exercised (${taken} taken, ${refused} refused)`)
    const busiest = busiestWindow(model.log, windowMs)
    t.ok(busiest <= limit, `no window of ${windowMs} ms holds more than ${limit} units (busiest: ${busiest})`)
    t.equal(busiest, limit, 'and some window was full')
  }
})

t.test('a steady stream gets exactly limit units per window', async (t) => {
  const limit = 10
  const windowMs = 1_000
  const w = new SlidingWindow(limit, windowMs)
  const model = new Model(limit, windowMs)
  // one request every 10 ms for 5 s: 100 per window asked, 10 allowed
  for (let now = T0; now < T0 + 5_000; now += 10) {
    if (w.fits(1, now)) { w.take(1, now); model.take(1, now) }
  }
  t.equal(model.log.length, 50, '10 per second over 5 seconds')
  t.equal(busiestWindow(model.log, windowMs), limit)
  t.same(model.log.slice(0, 11).map((at) => at - T0), [0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 1_000], 'the 11th waits for the 1st to leave')
})
