/**
 * A seeded pseudo-random source. Every record gets its own generator, derived from
 * (seed, resource, id), so record 73 412 is computed without computing the 73 411
 * before it: 100 000 users cost nothing until a page asks for them, and any page is
 * the same bytes in every process started with the same seed.
 */
export interface Rng {
  /** A float in [0, 1). */
  next: () => number
  /** An integer in [min, max], both included. */
  int: (min: number, max: number) => number
  chance: (probability: number) => boolean
  pick: <T>(items: readonly T[]) => T
  /** `count` distinct items in their original order. */
  sample: <T>(items: readonly T[], count: number) => T[]
}

/** mulberry32: 32-bit state, full period, good enough for fake data and fast. */
function mulberry32 (state: number): () => number {
  let a = state >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296
  }
}

/** murmur3's finaliser: nearby inputs (ids 1, 2, 3) give unrelated states. */
function mix (h: number): number {
  h ^= h >>> 16
  h = Math.imul(h, 0x85ebca6b)
  h ^= h >>> 13
  h = Math.imul(h, 0xc2b2ae35)
  return (h ^ (h >>> 16)) >>> 0
}

function createRng (state: number): Rng {
  const next = mulberry32(state)
  const int = (min: number, max: number): number => min + Math.floor(next() * (max - min + 1))
  return {
    next,
    int,
    chance: (probability) => next() < probability,
    pick: (items) => items[int(0, items.length - 1)] as (typeof items)[number],
    sample: (items, count) => {
      // Selection sampling (Knuth's algorithm S): one pass, order kept, exactly `count` items.
      const chosen: Array<(typeof items)[number]> = []
      for (let i = 0; i < items.length && chosen.length < count; i++) {
        if (next() * (items.length - i) < count - chosen.length) chosen.push(items[i] as (typeof items)[number])
      }
      return chosen
    }
  }
}

/** The generator of one record: `salt` tells resources apart so user 7 and task 7 differ. */
export function recordRng (seed: number, salt: number, id: number): Rng {
  return createRng(mix(mix(seed ^ Math.imul(salt, 0x9e3779b1)) ^ id))
}
