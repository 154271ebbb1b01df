import t from 'tap'
import { SeedNeededError, type CounterCheck, type CounterResult } from '../../common/traffic/counter.js'
import { createLocalCounters } from '../../common/traffic/local-counters.js'
import { lookAt, quotaCheck, rateCheck, type QuotaCheckOptions } from '../helpers/counter-checks.js'

/**
 * The counts a gateway keeps in process (without Redis, or while Redis is lost), on a
 * fake clock: all or nothing across a request's checks, quotas counted from identity's
 * seed per period, the Retry-After and reset values, and a bounded memory.
 */

const T0 = Date.UTC(2024, 4, 1, 12)

function clock (start = T0): { now: () => number, set: (at: number) => void, advance: (ms: number) => void } {
  let at = start
  return { now: () => at, set: (to) => { at = to }, advance: (ms) => { at += ms } }
}

const rate = rateCheck
const quota = (id: string, limit: number, options: QuotaCheckOptions = {}): CounterCheck =>
  quotaCheck(id, limit, T0, { periodStart: T0 - 12 * 3_600_000, periodEnd: T0 + 12 * 3_600_000, ...options })
const look = lookAt

function takeAll (store: ReturnType<typeof createLocalCounters>, checks: CounterCheck[]): CounterResult[] {
  const answer = store.take(checks)
  if (answer instanceof Promise) throw new Error('the local store answers synchronously')
  return answer
}

function takeOne (store: ReturnType<typeof createLocalCounters>, check: CounterCheck): CounterResult {
  return takeAll(store, [check])[0] as CounterResult
}

t.test('a burst of exactly limit units, then refused until the oldest leaves', async (t) => {
  const c = clock()
  const store = createLocalCounters({ now: c.now })
  const check = rate('burst', 3, 10)
  t.same(store.take([check]), [{ allowed: true, remaining: 2, resetSeconds: 10, retryAfterSeconds: 0 }])
  t.same(store.take([check]), [{ allowed: true, remaining: 1, resetSeconds: 10, retryAfterSeconds: 0 }])
  t.same(store.take([check]), [{ allowed: true, remaining: 0, resetSeconds: 10, retryAfterSeconds: 0 }])
  t.same(store.take([check]), [{ allowed: false, remaining: 0, resetSeconds: 10, retryAfterSeconds: 10 }], 'the 4th is refused for the whole window')
  c.advance(9_999)
  t.same(store.take([check]), [{ allowed: false, remaining: 0, resetSeconds: 1, retryAfterSeconds: 1 }], '1 ms before: still refused, retry in 1 s (rounded up)')
  c.advance(1)
  t.same(store.take([check]), [{ allowed: true, remaining: 2, resetSeconds: 10, retryAfterSeconds: 0 }], 'at T0 + window: the burst left together, one taken again')
  t.same(takeOne(store, look(check)), { allowed: true, remaining: 2, resetSeconds: 10, retryAfterSeconds: 0 }, 'a look: two still free')
})

t.test('retryAfterSeconds and resetSeconds of rate checks', async (t) => {
  const c = clock()
  const store = createLocalCounters({ now: c.now })
  const check = rate('spaced', 3, 10)
  takeOne(store, check)
  c.set(T0 + 2_500)
  takeOne(store, check)
  c.set(T0 + 5_000)
  t.same(takeOne(store, check), { allowed: true, remaining: 0, resetSeconds: 5, retryAfterSeconds: 0 }, 'reset: when the oldest (T0) leaves')
  c.set(T0 + 6_000)
  t.same(takeOne(store, check), { allowed: false, remaining: 0, resetSeconds: 4, retryAfterSeconds: 4 }, 'cost 1: when the oldest leaves')
  t.same(takeOne(store, { ...check, cost: 2 }), { allowed: false, remaining: 0, resetSeconds: 4, retryAfterSeconds: 7 }, 'cost 2: when the second oldest (T0 + 2500) leaves, 6.5 s rounded up')
  t.same(takeOne(store, { ...check, cost: 3 }), { allowed: false, remaining: 0, resetSeconds: 4, retryAfterSeconds: 9 }, 'cost 3: when the newest (T0 + 5000) leaves')
  t.same(takeOne(store, { ...check, cost: 4 }), { allowed: false, remaining: 0, resetSeconds: 4, retryAfterSeconds: 10 }, 'cost > limit: never fits, told the window')
  c.set(T0 + 10_000)
  t.same(takeOne(store, { ...check, cost: 2 }), { allowed: false, remaining: 1, resetSeconds: 3, retryAfterSeconds: 3 }, 'one free, two asked: remaining says 1, retry when T0 + 2500 leaves')
  c.set(T0 + 12_500)
  t.same(takeOne(store, { ...check, cost: 2 }), { allowed: true, remaining: 0, resetSeconds: 3, retryAfterSeconds: 0 }, 'two free: both taken')
})

t.test('all or nothing: one full check refuses the request and takes from none of the others', async (t) => {
  const c = clock()
  const store = createLocalCounters({ now: c.now })
  const roomy = rate('roomy', 5, 10)
  const full = rate('full', 2, 60, 1, 'up:billing')
  const monthly = quota('monthly', 10, { seed: 3 })
  t.same(takeOne(store, full), { allowed: true, remaining: 1, resetSeconds: 60, retryAfterSeconds: 0 })
  t.same(takeOne(store, full), { allowed: true, remaining: 0, resetSeconds: 60, retryAfterSeconds: 0 })
  for (let i = 0; i < 3; i++) {
    const [a, b, q] = takeAll(store, [roomy, full, monthly])
    t.equal(a?.allowed, false, `${i}: the roomy check answers refused`)
    t.equal(a?.retryAfterSeconds, 0, `${i}: but it is not the one broken`)
    t.equal(a?.remaining, 5, `${i}: nothing taken from the roomy window`)
    t.equal(b?.allowed, false)
    t.equal(b?.retryAfterSeconds, 60, `${i}: the full one is broken`)
    t.equal(q?.allowed, false)
    t.equal(q?.remaining, 7, `${i}: nothing taken from the quota (seed 3 of 10)`)
    t.equal(q?.retryAfterSeconds, 0)
  }
  t.same(takeAll(store, [look(roomy), look(monthly)]).map((r) => r.remaining), [5, 7], 'looks: both untouched')
  t.same(takeAll(store, [roomy, monthly]).map((r) => [r.allowed, r.remaining]), [[true, 4], [true, 6]], 'without the full check both are taken')
  c.advance(60_000)
  t.same(takeAll(store, [roomy, full, monthly]).map((r) => [r.allowed, r.remaining]), [[true, 4], [true, 1], [true, 5]],
    'once the full window has emptied, all three are taken (the roomy window has emptied too)')
})

t.test('quotas: a seed is needed for an unknown counter, and only then', async (t) => {
  const c = clock()
  const store = createLocalCounters({ now: c.now })
  const limiter = rate('with-quota', 5, 10)
  const unknown = quota('unknown', 5)
  const other = quota('other', 5, { seed: 1 })
  const err = (() => { try { store.take([limiter, unknown, other]); return null } catch (e) { return e } })()
  t.ok(err instanceof SeedNeededError, 'SeedNeededError')
  t.same((err as SeedNeededError).checks.map((check) => check.id), ['unknown'], 'naming only the unseeded counter')
  t.equal(takeOne(store, look(limiter)).remaining, 5, 'nothing taken from the rate check of that request')
  t.throws(() => store.take([look(unknown)]), SeedNeededError, 'a look at an unknown counter needs the seed too')

  t.same(takeOne(store, { ...unknown, seed: 3 }), { allowed: true, remaining: 1, resetSeconds: 43_200, retryAfterSeconds: 0 }, 'seeded with 3: the 4th of 5')
  t.same(takeOne(store, unknown), { allowed: true, remaining: 0, resetSeconds: 43_200, retryAfterSeconds: 0 }, 'known now: no seed needed, the 5th')
  t.same(takeOne(store, { ...unknown, seed: 0 }), { allowed: false, remaining: 0, resetSeconds: 43_200, retryAfterSeconds: 43_200 }, 'a seed for a known counter is ignored')
  t.same(takeOne(store, look(unknown)), { allowed: true, remaining: 0, resetSeconds: 43_200, retryAfterSeconds: 0 }, 'a look fits, takes nothing')

  const over = quota('over', 5, { seed: 7 })
  t.same(takeOne(store, over), { allowed: false, remaining: 0, resetSeconds: 43_200, retryAfterSeconds: 43_200 }, 'a seed above the limit: refused, 0 left')

  const costly = quota('costly', 10, { seed: 6, cost: 5 })
  t.same(takeOne(store, costly), { allowed: false, remaining: 4, resetSeconds: 43_200, retryAfterSeconds: 43_200 }, 'cost 5 with 4 left: refused, 4 left')
  t.same(takeOne(store, { ...costly, cost: 4 }), { allowed: true, remaining: 0, resetSeconds: 43_200, retryAfterSeconds: 0 }, 'cost 4 fits exactly')
})

t.test('quotas: a new period starts fresh; reset and retry count to the period end', async (t) => {
  const c = clock()
  const store = createLocalCounters({ now: c.now })
  const day1 = { periodStart: Date.UTC(2024, 4, 1), periodEnd: Date.UTC(2024, 4, 2) }
  const day2 = { periodStart: Date.UTC(2024, 4, 2), periodEnd: Date.UTC(2024, 4, 3) }
  c.set(day1.periodEnd - 1_500)
  const first = quota('daily', 2, { ...day1, seed: 1 })
  t.same(takeOne(store, first), { allowed: true, remaining: 0, resetSeconds: 2, retryAfterSeconds: 0 }, '1.5 s before the end: reset in 2 s')
  t.same(takeOne(store, first), { allowed: false, remaining: 0, resetSeconds: 2, retryAfterSeconds: 2 }, 'refused until the period ends')
  c.set(day1.periodEnd - 1)
  t.same(takeOne(store, first), { allowed: false, remaining: 0, resetSeconds: 1, retryAfterSeconds: 1 }, '1 ms before: retry in 1 s, never 0')

  c.set(day2.periodStart)
  t.throws(() => store.take([{ ...first, ...day2, seed: undefined }]), SeedNeededError, 'the new period is a counter not known yet')
  t.same(takeOne(store, { ...first, ...day2, seed: 0 }), { allowed: true, remaining: 1, resetSeconds: 86_400, retryAfterSeconds: 0 }, 'seeded: counts from 0, not from the old period')
  t.same(takeOne(store, { ...first, ...day2 }), { allowed: true, remaining: 0, resetSeconds: 86_400, retryAfterSeconds: 0 })
  t.equal(takeOne(store, { ...first, ...day2 }).allowed, false)
})

t.test('cost 0 is a look: it takes nothing, whether or not the count is full', async (t) => {
  const c = clock()
  const store = createLocalCounters({ now: c.now })
  const check = rate('look', 2, 10)
  for (let i = 0; i < 5; i++) t.equal(takeOne(store, look(check)).remaining, 2, `look ${i}`)
  takeOne(store, check)
  takeOne(store, check)
  t.same(takeOne(store, look(check)), { allowed: true, remaining: 0, resetSeconds: 10, retryAfterSeconds: 0 }, 'a look at a full window is let through, 0 left')
  c.advance(10_000)
  t.equal(takeOne(store, look(check)).remaining, 2, 'looks moved nothing')
})

t.test('a changed limit starts a new window', async (t) => {
  const c = clock()
  const store = createLocalCounters({ now: c.now })
  takeOne(store, rate('changed', 2, 10))
  takeOne(store, rate('changed', 2, 10))
  t.equal(takeOne(store, rate('changed', 2, 10)).allowed, false)
  t.same(takeOne(store, rate('changed', 3, 10)), { allowed: true, remaining: 2, resetSeconds: 10, retryAfterSeconds: 0 })
})

t.test('maxBytes bounds the counts: the least recently used partition is forgotten', async (t) => {
  const c = clock()
  // a window of limit 10 weighs at least 128 bytes (its ring, 8 bytes per unit taken, and more): at most 10 fit in 1280
  const store = createLocalCounters({ now: c.now, maxBytes: 1_280 })
  const hot = rate('hot', 10, 60)
  for (let i = 0; i < 5; i++) takeOne(store, hot)
  const first = rate('cold-0', 10, 60)
  for (let i = 0; i < 10; i++) takeOne(store, first)
  t.equal(takeOne(store, first).allowed, false, 'cold-0 is full')
  let most = 0
  for (let i = 1; i <= 500; i++) {
    takeOne(store, rate(`cold-${i}`, 10, 60))
    if (i % 4 === 0) takeOne(store, look(hot)) // keeps it recently used
    most = Math.max(most, store.size())
  }
  t.ok(most <= 10, `never more than 10 windows held (most: ${most})`)
  t.ok(store.size() >= 5, `the bound is used, not emptied (${store.size()})`)
  t.equal(takeOne(store, look(hot)).remaining, 5, 'a partition in use keeps its count')
  t.same(takeOne(store, first), { allowed: true, remaining: 9, resetSeconds: 60, retryAfterSeconds: 0 }, 'a forgotten partition starts again from zero')

  const quotas = createLocalCounters({ now: c.now, maxBytes: 64 * 20 })
  for (let i = 0; i < 300; i++) takeOne(quotas, quota(`q-${i}`, 5, { seed: 0 }))
  t.ok(quotas.size() <= 20 && quotas.size() >= 19, `quotas (64 bytes each) bounded too: ${quotas.size()}`)
  t.throws(() => quotas.take([quota('q-0', 5)]), SeedNeededError, 'a forgotten quota needs its seed again')
})
