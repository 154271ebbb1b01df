import t from 'tap'
import { Redis } from 'ioredis'
import { assertJson, assertProblem, assertStatus } from '../helpers/assert.js'
import { pollUntil } from '../helpers/gateway-auth.js'
import { watchForLeaks } from '../helpers/leak-watch.js'
import { assertLoad, latency, runLoad, startLoad, type LoadOptions, type LoadTarget } from '../helpers/load-loop.js'
import { startProcessStack } from '../helpers/process-stack.js'
import { startPrivateRedis } from '../helpers/redis.js'

/**
 * Issue 6, faults: Redis SIGKILLed while a load runs through a gateway process, then
 * restarted on the same port. Requests verifiable through L1, a JWT or identity never
 * get a 5xx nor hang; the gateway reconnects on its own (readiness, L2 entries
 * written again); and a key revoked while Redis was down, whose event was lost, stops
 * working within the L1 TTL. Then Redis stalled (SIGSTOP: its sockets stay open,
 * nothing answers): still no 5xx, and every request answered in bounded time.
 */

const L1_TTL_MS = 2_000
/** Polling, the L1 entry's own timer and a loaded 2-core machine. */
const MARGIN_MS = 1_000
const REQUEST_DEADLINE_MS = 5_000
/** With Redis stalled, an L1 miss waits for Redis's command timeout (to read L2, then to write it) besides identity. */
const STALL_DEADLINE_MS = 3_000

const leaks = watchForLeaks()

/** How many L2 key entries Redis holds (0 when it cannot be reached). */
async function l2Entries (url: string): Promise<number> {
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null })
  redis.on('error', () => {})
  try {
    await redis.connect()
    let count = 0
    for await (const batch of redis.scanStream({ match: 'portier:key:*', count: 500 })) count += (batch as string[]).length
    return count
  } catch {
    return 0
  } finally {
    redis.disconnect()
  }
}

/** The redis-server's process id, to stop and continue it. */
async function redisPid (url: string): Promise<number> {
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null })
  try {
    await redis.connect()
    return Number(/process_id:(\d+)/.exec(await redis.info('server'))?.[1])
  } finally {
    redis.disconnect()
  }
}

t.test('Redis killed mid-load and restarted', async (t) => {
  const s = await startProcessStack(t, {
    leaks,
    // Its own redis-server whatever REDIS_URL says: this suite kills and stops it.
    redis: await startPrivateRedis(t),
    gatewayEnv: { GATEWAY_KEY_CACHE_L1_TTL_SECONDS: String(L1_TTL_MS / 1000), GATEWAY_IDENTITY_TIMEOUT_MS: '2000' }
  })
  const tokens = await s.login()
  const hot = await s.createKey(['users:list'])
  const revoked = await s.createKey(['users:list'])
  // Out of L1 every L1 TTL: while Redis is down only identity can vouch for them again.
  const unseen = await Promise.all(Array.from({ length: 8 }, async () => await s.createKey(['users:list'])))
  const withKey = (key: string): { headers: Record<string, string> } => ({ headers: { 'x-api-key': key } })
  assertJson(t, await s.call('/users?per_page=1', withKey(hot.key)), 200, 'before: the hot key')
  assertJson(t, await s.call('/users?per_page=1', { bearer: tokens.access_token }), 200, 'before: the token')

  t.ok(await l2Entries(s.redis.url) > 0, 'before: the hot key has an L2 entry')

  const url = `${s.gateway.url}/users?per_page=1`
  let unseenNext = 0
  const loadOptions = (requestTimeoutMs: number): LoadOptions => ({
    loops: 6,
    durationMs: 20_000,
    requestTimeoutMs,
    pauseMs: 5,
    target: (loop): LoadTarget => {
      if (loop < 2) return { label: 'bearer', url, headers: { authorization: `Bearer ${tokens.access_token}` } }
      if (loop < 4) return { label: 'hot key', url, headers: { 'x-api-key': hot.key } }
      // Each unseen key once, then round again: every L1 expiry sends them back to L2 or identity.
      const key = unseen[unseenNext++ % unseen.length] as { key: string }
      return { label: 'identity-verified key', url, headers: { 'x-api-key': key.key } }
    }
  })
  const load = startLoad(loadOptions(REQUEST_DEADLINE_MS))
  await new Promise((resolve) => setTimeout(resolve, 500))

  const killedAt = performance.now()
  await s.redis.stop()
  const noticed = await pollUntil(async () => (await s.call('/readyz')).body.checks?.redis === 'down', { since: killedAt, timeoutMs: 5_000, intervalMs: 50 })
  t.not(noticed, null, `the gateway reports Redis down (${String(noticed)} ms after SIGKILL)`)
  const degraded = await s.call('/readyz')
  assertStatus(t, degraded, 200, 'readiness while Redis is down: still serving')
  t.equal(degraded.body.status, 'degraded', 'readiness while Redis is down: degraded')

  // The revocation's event cannot be published: only the L1 TTL bounds how long the key keeps working.
  assertJson(t, await s.call('/users?per_page=1', withKey(revoked.key)), 200, 'Redis down: the key to revoke, in L1 from now on')
  assertStatus(t, await s.identity.admin('POST', `/admin/keys/${revoked.id}/revoke`), 200, 'Redis down: the key revoked at identity')
  const revokedAt = performance.now()
  let lastAccepted = 0
  const refusedAfter = await pollUntil(async () => {
    const answer = await s.call('/users?per_page=1', withKey(revoked.key))
    if (answer.status === 200) lastAccepted = Math.round(performance.now() - revokedAt)
    return answer.status === 401
  }, { since: revokedAt, timeoutMs: L1_TTL_MS + 3_000, intervalMs: 25 })
  t.ok(refusedAfter !== null && refusedAfter <= L1_TTL_MS + MARGIN_MS,
    `the key revoked while Redis was down is refused ${String(refusedAfter)} ms after its revocation (bound: L1 TTL ${L1_TTL_MS} ms + ${MARGIN_MS} ms; last accepted at ${lastAccepted} ms)`)
  assertProblem(t, await s.call('/users?per_page=1', withKey(revoked.key)), 401, 'invalid_api_key', 'and it stays refused')

  // Down for more than an L1 TTL: every key in the load has been re-verified by identity meanwhile.
  const downFor = performance.now() - killedAt
  if (downFor < L1_TTL_MS + 500) await new Promise((resolve) => setTimeout(resolve, L1_TTL_MS + 500 - downFor))
  const restartedAt = performance.now()
  await s.redis.restart()
  const back = await pollUntil(async () => (await s.call('/readyz')).body.checks?.redis === 'up', { since: restartedAt, timeoutMs: 10_000, intervalMs: 50 })
  t.not(back, null, `the gateway reconnected on its own: readiness shows Redis up ${String(back)} ms after the restart`)
  t.equal((await s.call('/readyz')).body.status, 'ready', 'and ready again')
  const refilled = await pollUntil(async () => await l2Entries(s.redis.url) > 0, { since: restartedAt, timeoutMs: 10_000, intervalMs: 50 })
  t.not(refilled, null, `L2 entries are written again (${String(refilled)} ms after the restart)`)
  await new Promise((resolve) => setTimeout(resolve, 500))
  const samples = await load.stop()

  assertLoad(t, samples, 'load through the outage', [200])
  for (const label of ['bearer', 'hot key', 'identity-verified key']) {
    const during = samples.filter((x) => x.label === label && x.startedAt > killedAt && x.startedAt < restartedAt)
    t.ok(during.length > 0, `${label}: ${during.length} requests while Redis was down, all 200 (latency ${JSON.stringify(latency(during))})`)
  }
  assertProblem(t, await s.call('/users?per_page=1', withKey(revoked.key)), 401, 'invalid_api_key', 'after the restart the revoked key is still refused')

  // Worse than dead: a Redis that keeps its sockets open and never answers (stopped, or cut off without a reset).
  const pid = await redisPid(s.redis.url)
  process.kill(pid, 'SIGSTOP')
  t.teardown(() => { try { process.kill(pid, 'SIGCONT') } catch {} })
  const stalledAt = performance.now()
  const stalled = await runLoad({ ...loadOptions(STALL_DEADLINE_MS), durationMs: L1_TTL_MS + 1_000 })
  process.kill(pid, 'SIGCONT')
  assertLoad(t, stalled, `Redis stalled (SIGSTOP) for ${Math.round(performance.now() - stalledAt)} ms: each request within ${STALL_DEADLINE_MS} ms`, [200])
  t.ok(stalled.some((x) => x.label === 'identity-verified key'), `keys re-verified meanwhile: latency ${JSON.stringify(latency(stalled.filter((x) => x.label === 'identity-verified key')))}`)
  // Keys keep coming back from identity as their L1 entries expire: their L2 entries show the cache in use again.
  const resumed = await pollUntil(async () => {
    for (const { key } of unseen) await s.call('/users?per_page=1', withKey(key))
    return await l2Entries(s.redis.url) > 0 && (await s.call('/readyz')).body.status === 'ready'
  }, { timeoutMs: 10_000, intervalMs: 100 })
  t.not(resumed, null, `Redis resumed (SIGCONT): ready, and L2 entries written again, ${String(resumed)} ms later`)

  await leaks.assertNoLeaks(t)
})
