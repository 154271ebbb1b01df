import t from 'tap'
import { createRedis, waitForRedis, type RedisClient } from '../../common/redis.js'
import type { CounterCheck, CounterResult, CounterStore } from '../../common/traffic/counter.js'
import type { QuotaPolicy, RatePolicy } from '../../common/traffic/policy.js'
import { createRedisCounters } from '../../common/traffic/redis-counters.js'
import { startRedisCluster, type TestRedisCluster } from '../helpers/redis-cluster.js'

/**
 * The traffic counters on a real Redis Cluster of three masters: the counts of one
 * partition share a hash tag, so one script call checks and takes them together in
 * one slot (never CROSSSLOT); a request spanning partitions is one call per partition;
 * and two replicas hammering one count get exactly its limit.
 */

let cluster: TestRedisCluster
let store: CounterStore
let other: CounterStore
const clients: RedisClient[] = []
t.teardown(() => { for (const c of clients) c.disconnect() })

async function client (): Promise<RedisClient> {
  const c = createRedis({ mode: 'cluster', nodes: cluster.nodes.map((node) => ({ host: '127.0.0.1', port: Number(node.split(':')[1]) })), tls: false })
  c.on('error', () => {})
  clients.push(c)
  if (!await waitForRedis(c, 10_000)) throw new Error('cluster client not ready')
  return c
}

t.before(async () => {
  cluster = await startRedisCluster(t)
  store = createRedisCounters(await client())
  other = createRedisCounters(await client())
})

let unique = 0
const idOf = (what: string): string => `test|${what}|${++unique}`

function rate (id: string, limit: number, windowSeconds: number, tag: string, cost = 1): CounterCheck {
  const policy: RatePolicy = { name: 'burst', kind: 'rate', limit, window_seconds: windowSeconds, partition: 'key' }
  return { id, scope: 'test', tag, policy, cost, periodStart: 0, periodEnd: 0, seed: undefined }
}

function quota (id: string, limit: number, tag: string, seed: number | undefined): CounterCheck {
  const policy: QuotaPolicy = { name: 'monthly', kind: 'quota', limit, period: 'day', partition: 'key' }
  const now = Date.now()
  return { id, scope: 'test', tag, policy, cost: 1, periodStart: now - 60_000, periodEnd: now + 3_600_000, seed }
}

const look = (check: CounterCheck): CounterCheck => ({ ...check, cost: 0 })
const remainingOf = async (s: CounterStore, checks: CounterCheck[]): Promise<number[]> =>
  (await s.take(checks.map(look))).map((r) => r.remaining)

/** Partition names whose keys live on different masters (found by asking the cluster). */
async function tagsOnDifferentNodes (count: number): Promise<string[]> {
  const byNode = new Map<number, string>()
  for (let i = 0; byNode.size < count && i < 1_000; i++) {
    const tag = `k:spread-${i}`
    const node = await cluster.nodeOf(`{${tag}}`)
    if (!byNode.has(node)) byNode.set(node, tag)
  }
  return [...byNode.values()]
}

t.test('the checks of one partition go to one slot and are all or nothing', async (t) => {
  const tag = 'k:one-partition'
  const roomy = rate(idOf('roomy'), 5, 10, tag)
  const full = rate(idOf('full'), 1, 60, tag)
  const daily = quota(idOf('daily'), 10, tag, 2)
  const results = await store.take([roomy, full, daily])
  t.same(results.map((r) => [r.allowed, r.remaining]), [[true, 4], [true, 0], [true, 7]], 'three keys, one call: no CROSSSLOT')
  t.same(await cluster.countOnEachNode(`portier:tc:{${tag}}*`).then((counts) => counts.filter((n) => n !== 0)), [3], 'all three keys on one master')
  const keys = [`portier:tc:{${tag}}${roomy.id}`, `portier:tc:{${tag}}${full.id}`, `portier:tc:{${tag}}${daily.id}@${daily.periodStart}`]
  t.same(await Promise.all(keys.map(async (key) => await cluster.client().exists(key))), [1, 1, 1], 'the keys, by name')
  const slots = await Promise.all(keys.map(async (key) => await cluster.client().cluster('KEYSLOT', key)))
  t.equal(new Set(slots).size, 1, `in one slot (${String(slots[0])})`)

  for (let i = 0; i < 3; i++) {
    const refused = await store.take([roomy, full, daily])
    t.same(refused.map((r) => r.allowed), [false, false, false], `${i}: refused as a whole`)
    t.same(refused.map((r) => r.remaining), [4, 0, 7], `${i}: nothing taken from the others`)
    t.ok((refused[1] as CounterResult).retryAfterSeconds >= 59, `${i}: the full one is the one broken`)
  }
  t.same(await remainingOf(other, [roomy, daily]), [4, 7], 'the other replica sees the same counts')
  t.same((await other.take([roomy, daily])).map((r) => [r.allowed, r.remaining]), [[true, 3], [true, 6]])
})

t.test('checks of several partitions in one take: one call per partition', async (t) => {
  const [a, b, c] = await tagsOnDifferentNodes(3)
  t.ok(a !== undefined && b !== undefined && c !== undefined, 'three partitions on three masters')
  const checks = [
    rate(idOf('a1'), 3, 10, a as string), rate(idOf('b1'), 2, 10, b as string),
    rate(idOf('a2'), 4, 10, a as string), quota(idOf('c1'), 5, c as string, 0)
  ]
  const first = await store.take(checks)
  t.same(first.map((r) => [r.allowed, r.remaining]), [[true, 2], [true, 1], [true, 3], [true, 4]], 'answers in the order of the checks')
  const perNode = await cluster.countOnEachNode('portier:tc:{k:spread-*')
  t.same([...perNode].sort(), [1, 1, 2], 'the keys are spread over the three masters (two of one partition together)')

  t.same((await store.take(checks)).map((r) => r.allowed), [true, true, true, true], 'second take: all fit')
  const third = await store.take(checks)
  t.same(third.map((r) => r.allowed), [false, false, false, false], 'third: partition b is full, so the request is refused')
  t.ok((third[1] as CounterResult).retryAfterSeconds > 0, 'b is the one broken')
  t.equal((third[0] as CounterResult).retryAfterSeconds, 0)
  // Across partitions the take is per partition (documented): a and c, which fit, were counted.
  t.same(await remainingOf(store, checks), [0, 0, 1, 2], 'the partitions that fit were taken, the full one was not')
})

t.test('exact under concurrency on a cluster: two replicas, 150 takes each, limit 100', async (t) => {
  const check = rate(idOf('shared'), 100, 10, 'up:shared')
  const results = await Promise.all(Array.from({ length: 300 }, async (_v, i) =>
    ((await (i % 2 === 0 ? store : other).take([check]))[0] as CounterResult)))
  const allowed = results.filter((r) => r.allowed)
  t.equal(allowed.length, 100, 'exactly 100 allowed')
  t.same(allowed.map((r) => r.remaining).sort((x, y) => x - y), Array.from({ length: 100 }, (_v, i) => i), 'each saw its own remaining')
  t.ok(results.some((r, i) => i % 2 === 1 && r.allowed) && results.some((r, i) => i % 2 === 0 && r.allowed), 'both replicas were let through')
  t.same(await remainingOf(other, [check]), [0])
})
