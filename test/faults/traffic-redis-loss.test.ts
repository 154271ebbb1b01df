import t from 'tap'
import { startGateway, startStack } from '../helpers/gateway.js'
import { pollUntil } from '../helpers/gateway-auth.js'
import { startPrivateRedis } from '../helpers/redis.js'
import { parseFieldList, rate, upstreamsWithPolicies } from '../helpers/traffic.js'

/**
 * Redis killed while requests run: a fail-open policy (the default for rate limits)
 * goes on with this gateway's own count, so its limit still holds per replica; a
 * fail-closed one answers 503 with Retry-After until Redis is back. No request hangs
 * or fails otherwise.
 */
t.test('Redis lost under load: fail-open rate limits count locally, fail-closed ones answer 503', async (t) => {
  const redis = await startPrivateRedis(t)
  const stack = await startStack(t, { checkLookups: false, redis })
  const upstreams = upstreamsWithPolicies(stack.upstreamUrl, {
    routes: {
      'GET /users': { policies: [rate('open-rate', 40, 60)] },
      'GET /tasks': { policies: [rate('closed-rate', 1000, 60, 'key', { on_redis_loss: 'closed' })] },
      'GET /meetings': { policies: [{ name: 'open-quota', kind: 'quota', limit: 1000, period: 'day', partition: 'key', on_redis_loss: 'open' }] },
      'GET /users/:id': { policies: [{ name: 'closed-quota', kind: 'quota', limit: 1000, period: 'day', partition: 'key' }] }
    }
  })
  const gateway = await startGateway(t, { ...stack.gatewaySetup, upstreams })
  const { key } = await stack.createKey(['users:list', 'tasks:list', 'meetings:list', 'users:read'])
  const as = { headers: { 'x-api-key': key } }

  for (let i = 0; i < 10; i++) t.equal((await gateway.call('/users?per_page=1', as)).status, 200, 'counted in Redis')
  t.equal(parseFieldList((await gateway.call('/tasks', as)).headers.ratelimit).get('closed-rate')?.r, 999)

  // A load running while Redis dies.
  let running = true
  const seen = new Map<number, number>()
  const slowest = { ms: 0 }
  const load = (async () => {
    const { key: loadKey } = await stack.createKey(['users:list'])
    while (running) {
      const before = Date.now()
      const answer = await gateway.call('/users?per_page=1', { headers: { 'x-api-key': loadKey } })
      slowest.ms = Math.max(slowest.ms, Date.now() - before)
      seen.set(answer.status, (seen.get(answer.status) ?? 0) + 1)
    }
  })()
  await new Promise((resolve) => setTimeout(resolve, 200))
  await redis.stop()
  await new Promise((resolve) => setTimeout(resolve, 300))

  const statuses = []
  for (let i = 0; i < 45; i++) statuses.push((await gateway.call('/users?per_page=1', as)).status)
  t.equal(statuses.filter((s) => s === 200).length, 40, 'the fail-open policy counts in this gateway alone: its limit of 40 holds locally')
  t.equal(statuses.filter((s) => s === 429).length, 5, 'and refuses beyond it')
  const closed = await gateway.call('/tasks', as)
  t.equal(closed.status, 503, 'the fail-closed policy cannot be checked')
  t.equal(closed.body.code, 'traffic_control_unavailable')
  t.ok(Number(closed.headers['retry-after']) >= 1, 'with Retry-After')
  t.equal((await gateway.call('/users/1', as)).status, 503, 'a quota fails closed by default')
  const openQuota = await gateway.call('/meetings', as)
  t.equal(openQuota.status, 200, 'a quota declared on_redis_loss: open goes on, counted in this gateway')
  t.ok(parseFieldList(openQuota.headers.ratelimit).has('open-quota'), 'with its RateLimit fields')

  await redis.restart()
  const back = await pollUntil(async () => (await gateway.call('/tasks', as)).status === 200, { timeoutMs: 10_000, intervalMs: 100 })
  t.not(back, null, 'the fail-closed policy answers again once Redis is back')
  running = false
  await load
  t.same([...seen.keys()].filter((status) => status >= 500), [], `the load saw no 5xx (${JSON.stringify(Object.fromEntries(seen))})`)
  t.ok(slowest.ms < 2_000, `no request of the load hung (slowest ${slowest.ms} ms)`)
})
