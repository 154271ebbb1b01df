import t from 'tap'
import { setTimeout as sleep } from 'node:timers/promises'
import { Redis } from 'ioredis'
import { createRedis, waitForRedis, type RedisClient } from '../../common/redis.js'
import type { CounterCheck, CounterStore } from '../../common/traffic/counter.js'
import type { RatePolicy } from '../../common/traffic/policy.js'
import { BATCH_MIN_LIMIT, createRedisCounters } from '../../common/traffic/redis-counters.js'
import { startRedis } from '../helpers/redis.js'

/**
 * Batches under large limits: while more than half of a limit of at least 10 000 is
 * left, a gateway that asks Redis again within 200 ms takes 1/1000 of it (at most 100
 * units) with a request and spends it on its own for 200 ms, so most requests need no
 * round trip; below that limit, and
 * once half is used, every unit is counted in Redis. Over one window the count stays
 * exact: every unit handed out was counted when it was.
 */

const clients: RedisClient[] = []
async function client (url: string): Promise<RedisClient> {
  const c = createRedis(url)
  clients.push(c)
  if (!await waitForRedis(c, 5_000)) throw new Error(`redis at ${url} not ready`)
  return c
}
t.teardown(() => { for (const c of clients) c.disconnect() })

let raw: Redis
let url: string
t.before(async () => {
  const redis = await startRedis(t)
  url = redis.url
  raw = new Redis(redis.url)
  t.teardown(() => { raw.disconnect() })
})

let ids = 0
const rate = (limit: number, windowSeconds: number): CounterCheck => {
  const id = `batch-test-${++ids}`
  const policy: RatePolicy = { name: 'big', kind: 'rate', limit, window_seconds: windowSeconds, partition: 'key' }
  return { id, scope: 'test', tag: id, policy, cost: 1, periodStart: 0, periodEnd: 0, seed: undefined }
}

async function scripts (): Promise<number> {
  const stats = await raw.info('commandstats')
  return Number(/cmdstat_evalsha:calls=(\d+)/.exec(stats)?.[1] ?? 0) + Number(/cmdstat_eval:calls=(\d+)/.exec(stats)?.[1] ?? 0)
}

async function takeMany (store: CounterStore, check: CounterCheck, count: number): Promise<number> {
  let allowed = 0
  for (let i = 0; i < count; i++) if ((await store.take([check]))[0]?.allowed === true) allowed++
  return allowed
}

t.test('a large limit: about one script call per batch of 100', async (t) => {
  const store = createRedisCounters(await client(url), { batches: true })
  const check = rate(100_000, 60)
  const before = await scripts()
  t.equal(await takeMany(store, check, 1_000), 1_000)
  const calls = await scripts() - before
  t.ok(calls >= 9 && calls <= 12, `1 000 takes made ${calls} script calls (one per 101)`)
  const remaining = (await store.take([check]))[0]?.remaining ?? -1
  t.ok(remaining <= 100_000 - 1_001 && remaining >= 100_000 - 1_001 - 100, `RateLimit r stays within a batch of the exact count (${remaining})`)
})

t.test('below 10 000, and without batches, every take is a script call', async (t) => {
  for (const [label, store, check] of [
    ['limit 9 999', createRedisCounters(await client(url), { batches: true }), rate(BATCH_MIN_LIMIT - 1, 60)],
    ['batches off', createRedisCounters(await client(url)), rate(100_000, 60)]
  ] as const) {
    const before = await scripts()
    await takeMany(store, check, 50)
    t.equal(await scripts() - before, 50, `${label}: 50 takes, 50 calls`)
  }
})

t.test('a batch lives 200 ms: after that the next take asks Redis', async (t) => {
  const store = createRedisCounters(await client(url), { batches: true })
  const check = rate(100_000, 60)
  // The first take asks for no batch; the second, soon after, brings one.
  await store.take([check])
  await store.take([check])
  const before = await scripts()
  await store.take([check])
  t.equal(await scripts() - before, 0, 'spent from the batch')
  await sleep(250)
  await store.take([check])
  t.equal(await scripts() - before, 1, 'the batch expired')
})

t.test('a partition that asks now and then gets no batch: nothing is taken that it does not spend', async (t) => {
  const store = createRedisCounters(await client(url), { batches: true })
  const check = rate(100_000, 60)
  const before = await scripts()
  const remaining: number[] = []
  for (let i = 0; i < 3; i++) {
    remaining.push((await store.take([check]))[0]?.remaining ?? -1)
    await sleep(250)
  }
  t.equal(await scripts() - before, 3, 'every take asked Redis')
  t.same(remaining, [99_999, 99_998, 99_997], 'one unit each, no batch')
})

t.test('two replicas reaching a limit of 10 000 get exactly it in one window', async (t) => {
  const stores = [createRedisCounters(await client(url), { batches: true }), createRedisCounters(await client(url), { batches: true })]
  const check = rate(10_000, 60)
  let allowed = 0
  const worker = async (store: CounterStore): Promise<void> => {
    for (let i = 0; i < 5_200; i++) if ((await store.take([check]))[0]?.allowed === true) allowed++
  }
  await Promise.all(stores.map(worker))
  // Units handed out in batches were counted when taken: a batch left unspent when the limit is reached can only mean fewer.
  t.ok(allowed <= 10_000 && allowed >= 10_000 - 2 * 10, `${allowed} allowed of 10 400 (10 000, less at most one unspent batch per replica)`)
})
