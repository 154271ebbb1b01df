import t from 'tap'
import { setTimeout as sleep } from 'node:timers/promises'
import { Redis } from 'ioredis'
import { createRedis, waitForRedis, type RedisClient } from '../../common/redis.js'
import { CountersUnavailableError, SeedNeededError, type CounterCheck, type CounterResult, type CounterStore } from '../../common/traffic/counter.js'
import { createLocalCounters } from '../../common/traffic/local-counters.js'
import { createRedisCounters } from '../../common/traffic/redis-counters.js'
import { freePort, startRedis } from '../helpers/redis.js'
import { lookAt, quotaCheck, rateCheck, type QuotaCheckOptions } from '../helpers/counter-checks.js'

/**
 * The counts the gateway replicas share through Redis (one Lua script per partition,
 * Redis's clock): the same answers as the in-process store, all or nothing within a
 * partition, quotas seeded from identity, exact under concurrent replicas, and
 * CountersUnavailableError (the caller's fallback) when Redis cannot be asked.
 */

const clients: RedisClient[] = []
async function client (url: string): Promise<RedisClient> {
  const c = createRedis(url)
  c.on('error', () => {}) // a stopped server: the counters answer CountersUnavailableError
  clients.push(c)
  if (!await waitForRedis(c, 5_000)) throw new Error(`redis at ${url} not ready`)
  return c
}
t.teardown(() => { for (const c of clients) c.disconnect() })

let raw: Redis
/** Two gateway replicas: a client each. */
let store: CounterStore
let other: CounterStore

t.before(async () => {
  const redis = await startRedis(t)
  raw = new Redis(redis.url)
  t.teardown(() => { raw.disconnect() })
  store = createRedisCounters(await client(redis.url))
  other = createRedisCounters(await client(redis.url))
})

let unique = 0
/** A counter id of its own per test: the tests share one Redis. */
const idOf = (what: string): string => `test|${what}|${++unique}`
/** Where a count lives: its partition as the hash tag; a quota's key names its period too. */
const keyOf = (check: CounterCheck): string =>
  `portier:tc:{${check.tag}}${check.id}${check.policy.kind === 'quota' ? `@${check.periodStart}` : ''}`

const rate = rateCheck
const quota = (id: string, limit: number, options: QuotaCheckOptions = {}): CounterCheck => quotaCheck(id, limit, Date.now(), options)
const look = lookAt

async function takeOne (s: CounterStore, check: CounterCheck): Promise<CounterResult> {
  return (await s.take([check]))[0] as CounterResult
}

async function rejection (operation: unknown): Promise<unknown> {
  try {
    await operation
    return null
  } catch (err) {
    return err
  }
}

t.test('a burst of exactly limit units, then refused', async (t) => {
  const check = rate(idOf('burst'), 5, 10)
  for (let left = 4; left >= 0; left--) {
    const result = await takeOne(store, check)
    t.same(result, { allowed: true, remaining: left, resetSeconds: 10, retryAfterSeconds: 0 }, `allowed, ${left} left`)
  }
  for (let i = 0; i < 3; i++) {
    const refused = await takeOne(store, check)
    t.equal(refused.allowed, false, `take ${6 + i} refused`)
    t.equal(refused.remaining, 0)
    t.ok(refused.retryAfterSeconds >= 9 && refused.retryAfterSeconds <= 10, `retry after the window (${refused.retryAfterSeconds} s)`)
    t.ok(refused.resetSeconds >= 9 && refused.resetSeconds <= 10, `reset when the oldest leaves (${refused.resetSeconds} s)`)
  }
  const costly = await takeOne(store, { ...rate(idOf('costly'), 5, 10), cost: 6 })
  t.same(costly, { allowed: false, remaining: 5, resetSeconds: 0, retryAfterSeconds: 10 }, 'cost > limit never fits: retry after the window, nothing taken')
})

t.test('all or nothing within one partition', async (t) => {
  const roomy = rate(idOf('roomy'), 5, 10)
  const full = rate(idOf('full'), 1, 60)
  const monthly = quota(idOf('monthly'), 10, { seed: 3 })
  t.equal((await takeOne(store, full)).allowed, true)
  for (let i = 0; i < 3; i++) {
    const [a, b, q] = await store.take([roomy, full, monthly])
    t.same([a?.allowed, b?.allowed, q?.allowed], [false, false, false], `${i}: every answer says refused`)
    t.equal(a?.remaining, 5, `${i}: nothing taken from the roomy window`)
    t.equal(a?.retryAfterSeconds, 0, `${i}: the roomy window is not the one broken`)
    t.ok((b?.retryAfterSeconds ?? 0) >= 59, `${i}: the full one is`)
    t.equal(q?.remaining, 7, `${i}: the quota answers its seeded count, untaken`)
  }
  t.equal(await raw.exists(keyOf(roomy)), 0, 'the roomy window was never written')
  t.equal(await raw.exists(keyOf(monthly)), 0, 'nor the quota (its seed is not kept when nothing is taken)')
  t.same((await store.take([roomy, monthly])).map((r) => [r.allowed, r.remaining]), [[true, 4], [true, 6]], 'without the full one, both are taken')
  t.equal(await raw.get(keyOf(monthly)), '4', 'the quota is kept from its seed')
})

t.test('quota seeds', async (t) => {
  const limiter = rate(idOf('with-quota'), 5, 10)
  const unknown = quota(idOf('unknown'), 5)
  const seeded = quota(idOf('seeded'), 5, { seed: 1 })
  const err = await rejection(store.take([limiter, unknown, seeded]))
  t.ok(err instanceof SeedNeededError, 'SeedNeededError for a missing counter without a seed')
  t.same((err as SeedNeededError).checks.map((check) => check.id), [unknown.id], 'naming only that counter')
  t.equal((await takeOne(store, look(limiter))).remaining, 5, 'nothing taken from the rest of the request')
  t.equal(await raw.exists(keyOf(seeded)), 0, 'nor from the seeded quota')
  t.ok(await rejection(store.take([look(unknown)])) instanceof SeedNeededError, 'a look at a missing counter needs the seed too')

  t.same(await takeOne(store, { ...unknown, seed: 3 }), { allowed: true, remaining: 1, resetSeconds: 3_600, retryAfterSeconds: 0 }, 'seeded with 3: the 4th of 5')
  t.same(await takeOne(store, unknown), { allowed: true, remaining: 0, resetSeconds: 3_600, retryAfterSeconds: 0 }, 'the key exists: no seed needed')
  const ignored = await takeOne(store, { ...unknown, seed: 0 })
  t.same(ignored, { allowed: false, remaining: 0, resetSeconds: 3_600, retryAfterSeconds: 3_600 }, 'an existing key ignores the seed')
  t.equal(await raw.get(keyOf(unknown)), '5')

  const over = quota(idOf('over'), 5, { seed: 9 })
  t.same(await takeOne(store, over), { allowed: false, remaining: 0, resetSeconds: 3_600, retryAfterSeconds: 3_600 }, 'a seed above the limit: refused, 0 left')
  const pttl = await raw.pttl(keyOf(unknown))
  t.ok(pttl > 3_590_000 && pttl <= 3_600_000, `a quota key expires when its period ends (PTTL ${pttl})`)
})

t.test('cost 0 is a look that takes nothing', async (t) => {
  const check = rate(idOf('look'), 5, 10)
  t.same(await takeOne(store, look(check)), { allowed: true, remaining: 5, resetSeconds: 0, retryAfterSeconds: 0 }, 'a look at nothing')
  t.equal(await raw.exists(keyOf(check)), 0, 'writes nothing')
  await takeOne(store, check)
  await takeOne(store, check)
  for (let i = 0; i < 5; i++) t.equal((await takeOne(store, look(check))).remaining, 3, `look ${i}: 3 left`)
  await takeOne(store, { ...check, cost: 3 })
  const atFull = await takeOne(store, look(check))
  t.same([atFull.allowed, atFull.remaining, atFull.retryAfterSeconds], [true, 0, 0], 'a look at a full window fits, 0 left')

  const q = quota(idOf('quota-look'), 10, { seed: 4 })
  t.equal((await takeOne(store, look(q))).remaining, 6, 'a look at a quota: its seeded count')
  t.equal(await raw.exists(keyOf(q)), 0, 'and writes nothing')
})

t.test('a window key expires with the window', async (t) => {
  const long = rate(idOf('long'), 3, 10)
  await takeOne(store, long)
  const pttl = await raw.pttl(keyOf(long))
  t.ok(pttl > 0 && pttl <= 10_000, `PTTL ${pttl} within (0, 10000]`)
  t.equal(await raw.strlen(keyOf(long)), 8 + 8, 'a 4-byte head, a 4-byte count in the window and 8 bytes per unit taken')

  const short = rate(idOf('short'), 2, 1)
  t.equal((await takeOne(store, short)).allowed, true)
  t.equal((await takeOne(store, short)).allowed, true)
  const refused = await takeOne(store, short)
  t.same([refused.allowed, refused.retryAfterSeconds], [false, 1])
  await sleep(1_050)
  t.equal(await raw.exists(keyOf(short)), 0, 'gone once the window has passed')
  t.same(await takeOne(store, short), { allowed: true, remaining: 1, resetSeconds: 1, retryAfterSeconds: 0 }, 'a new burst')
})

t.test('exact under concurrency: two replicas, 300 takes, limit 100', async (t) => {
  const check = rate(idOf('shared'), 100, 10)
  const takes = Array.from({ length: 300 }, async (_v, i) => await takeOne(i % 2 === 0 ? store : other, check))
  const results = await Promise.all(takes)
  const allowed = results.filter((r) => r.allowed)
  t.equal(allowed.length, 100, 'exactly 100 allowed')
  t.same(allowed.map((r) => r.remaining).sort((a, b) => a - b), Array.from({ length: 100 }, (_v, i) => i), 'each allowed take saw its own remaining (99 … 0)')
  t.ok(results.slice(0, 300).filter((r, i) => i % 2 === 1 && r.allowed).length > 0, 'the second replica was let through too')
  t.equal((await takeOne(other, look(check))).remaining, 0)

  const q = quota(idOf('shared-quota'), 50, { seed: 0 })
  await takeOne(store, q) // the key exists from here: later seeds are ignored
  const quotaResults = await Promise.all(Array.from({ length: 120 }, async (_v, i) => await takeOne(i % 2 === 0 ? store : other, q)))
  t.equal(quotaResults.filter((r) => r.allowed).length, 49, 'a quota too: exactly its limit')
  t.equal(await raw.get(keyOf(q)), '50')
})

t.test('the same answers as the in-process store', async (t) => {
  const local = createLocalCounters()
  const costs = [1, 2, 1, 3, 1, 0, 1, 1, 6]
  const id = idOf('agree')
  const check = rate(id, 5, 10)
  const fromRedis: CounterResult[] = []
  const fromLocal: CounterResult[] = []
  for (const cost of costs) {
    fromRedis.push(await takeOne(store, { ...check, cost }))
    fromLocal.push((local.take([{ ...check, cost }]) as CounterResult[])[0] as CounterResult)
  }
  t.same(fromRedis, fromLocal, 'rate: allowed, remaining, reset and retry agree')
  t.same(fromRedis.map((r) => r.allowed), [true, true, true, false, true, true, false, false, false], 'and are what limit 5 says')

  const q = quota(idOf('agree-quota'), 5, { seed: 1 })
  const quotaRedis: CounterResult[] = []
  const quotaLocal: CounterResult[] = []
  for (const cost of [1, 2, 2, 0, 1, 1]) {
    quotaRedis.push(await takeOne(store, { ...q, cost }))
    quotaLocal.push((local.take([{ ...q, cost }]) as CounterResult[])[0] as CounterResult)
  }
  t.same(quotaRedis.map((r) => [r.allowed, r.remaining, r.retryAfterSeconds > 0]), quotaLocal.map((r) => [r.allowed, r.remaining, r.retryAfterSeconds > 0]), 'quota: allowed and remaining agree')
  t.same(quotaRedis.map((r) => r.allowed), [true, true, false, true, true, false])

  // The next period, as a gateway whose clock has passed the boundary sees it (Redis's clock may not have yet).
  const next = { ...q, periodStart: q.periodEnd, periodEnd: q.periodEnd + 86_400_000, seed: undefined }
  const errRedis = await rejection(store.take([next]))
  const errLocal = (() => { try { local.take([next]); return null } catch (err) { return err } })()
  t.ok(errLocal instanceof SeedNeededError, 'in process: a new period is a counter not known yet')
  t.ok(errRedis instanceof SeedNeededError, 'in Redis too: the last period\'s count is not the new one\'s')
  const freshRedis = await takeOne(store, { ...next, seed: 0 })
  const freshLocal = (local.take([{ ...next, seed: 0 }]) as CounterResult[])[0]
  t.same([freshRedis.allowed, freshRedis.remaining], [true, 4], 'the new period counts from its seed in Redis')
  t.same([freshLocal?.allowed, freshLocal?.remaining], [true, 4], 'and in process')
})

t.test('Redis lost: CountersUnavailableError within the deadline', async (t) => {
  const lost = await startRedis(t)
  if (!lost.private) { t.comment('REDIS_URL is set: no private server to stop'); return }
  const c = await client(lost.url)
  const counters = createRedisCounters(c, { deadlineMs: 300 })
  const check = rate(idOf('lost'), 5, 10)
  t.equal((await takeOne(counters, check)).remaining, 4, 'answers while Redis is up')

  // A Redis that holds the command without answering (paused): the deadline, not the command timeout, ends the wait.
  const pauser = new Redis(lost.url)
  t.teardown(() => { pauser.disconnect() })
  await pauser.client('PAUSE', 800, 'ALL')
  const pausedAt = Date.now()
  const paused = await rejection(counters.take([check]))
  const waited = Date.now() - pausedAt
  t.ok(paused instanceof CountersUnavailableError, 'paused: CountersUnavailableError')
  t.ok(waited >= 250 && waited < 480, `after the 300 ms deadline (${waited} ms)`)
  t.match((paused as Error).cause, { message: /within 300 ms/ }, 'the deadline is the cause')
  await sleep(pausedAt + 900 - Date.now()) // the pause ends (UNPAUSE would wait for it too)

  await lost.stop()
  for (let i = 0; i < 3; i++) {
    const started = Date.now()
    const err = await rejection(counters.take([check]))
    t.ok(err instanceof CountersUnavailableError, `${i}: CountersUnavailableError`)
    t.ok(Date.now() - started < 1_000, `${i}: within the deadline (${Date.now() - started} ms)`)
  }
  await lost.restart()
  const deadline = Date.now() + 10_000
  let back: CounterResult | null = null
  while (back === null && Date.now() < deadline) {
    back = await takeOne(counters, check).catch(async () => { await sleep(100); return null })
  }
  t.same(back && [back.allowed, back.remaining], [true, 4], 'answers again once Redis is back (empty: the count restarts)')
})

t.test('a client pointed at a closed port: CountersUnavailableError', async (t) => {
  const c = createRedis(`redis://127.0.0.1:${await freePort()}`)
  c.on('error', () => {})
  clients.push(c)
  const counters = createRedisCounters(c, { deadlineMs: 200 })
  for (const check of [rate(idOf('nowhere'), 5, 10), quota(idOf('nowhere-quota'), 5, { seed: 0 })]) {
    const started = Date.now()
    const err = await rejection(counters.take([check]))
    t.ok(err instanceof CountersUnavailableError, `${check.policy.kind}: CountersUnavailableError`)
    t.ok(Date.now() - started < 1_000, `${check.policy.kind}: at once (${Date.now() - started} ms)`)
  }
})
