import t from 'tap'
import { startGateway, startStack, type TestGateway } from '../../helpers/gateway.js'
import { pollUntil } from '../../helpers/gateway-auth.js'
import { startPrivateRedis } from '../../helpers/redis.js'
import { parseFieldList, upstreamsWithPolicies } from '../../helpers/traffic.js'

const as = (key: string) => ({ headers: { 'x-api-key': key } })
const statusesOf = async (gateway: TestGateway, requests: Array<{ headers?: Record<string, string>, bearer?: string }>): Promise<number[]> => {
  const statuses = []
  for (const request of requests) statuses.push((await gateway.call('/users?per_page=1', request)).status)
  return statuses
}

t.test('policies declared on keys and roles in identity', async (t) => {
  const stack = await startStack(t, { checkLookups: false, roles: { reader: ['users:list'], metered: [] } })
  const { gateway } = stack

  t.test('a key\'s own rate limit', async (t) => {
    const key = await stack.createKey(['users:list'], { policies: [{ name: 'key-burst', kind: 'rate', limit: 3, window_seconds: 60, partition: 'key' }] })
    t.same(await statusesOf(gateway, [as(key.key), as(key.key), as(key.key), as(key.key)]), [200, 200, 200, 429])
    const refused = await gateway.call('/users?per_page=1', as(key.key))
    t.equal(refused.body.code, 'rate_limited')
    t.same(refused.body.policies.map((p: { name: string }) => p.name), ['key-burst'])
    t.same(parseFieldList(refused.headers['ratelimit-policy']).get('key-burst'), { q: 3, w: 60 })
  })

  t.test('a role\'s per-user limit counts every key the user owns and the user\'s tokens together', async (t) => {
    const before = await stack.login()
    stack.clock.advance(1_000)
    const role = await stack.admin('PUT', '/admin/roles/metered', {
      permissions: [], policies: [{ name: 'per-user', kind: 'rate', limit: 4, window_seconds: 60, partition: 'user' }]
    })
    t.equal(role.status, 200)
    t.same(role.body.role.policies.map((p: { name: string }) => p.name), ['per-user'], 'the role view shows its policies')
    const first = await stack.createKey(['users:list'], { owner_user_id: stack.userId })
    const second = await stack.createKey(['users:list'], { owner_user_id: stack.userId })
    // Tokens issued before the role changed are refused (they carry the old policies): log in after it.
    stack.clock.advance(1_000)
    const session = await stack.login()
    const viaToken = await gateway.call('/users?per_page=1', { bearer: session.access_token })
    t.equal(viaToken.status, 200, viaToken.status === 200 ? 'the token is accepted' : `the token is refused: ${viaToken.text}`)
    const statuses = await statusesOf(gateway, [as(first.key), as(second.key), { bearer: session.access_token }, as(first.key), as(second.key), { bearer: session.access_token }])
    t.same(statuses, [200, 200, 200, 429, 429, 429], 'four in all (one above), whichever credential sends them')
    const old = await gateway.call('/users?per_page=1', { bearer: before.access_token })
    t.equal(old.status, 401, 'a token issued before the role\'s policies changed is refused, as after a permission change')
    t.equal(old.body.code, 'invalid_token')
    const unowned = await stack.createKey(['users:list'])
    t.equal((await gateway.call('/users?per_page=1', as(unowned.key))).status, 200, 'a key without an owner has none of the user\'s policies')
  })

  t.test('a key\'s per-route policy counts that key\'s requests to each route, no one else\'s', async (t) => {
    const policies = [{ name: 'each-route', kind: 'rate', limit: 2, window_seconds: 60, partition: 'route' }]
    const first = await stack.createKey(['users:list', 'users:read'], { policies })
    const second = await stack.createKey(['users:list', 'users:read'], { policies })
    const call = async (key: string, path: string): Promise<number> => (await gateway.call(path, as(key))).status
    t.same([await call(first.key, '/users'), await call(first.key, '/users'), await call(first.key, '/users')], [200, 200, 429])
    t.equal(await call(first.key, '/users/1'), 200, 'another route has its own count')
    t.same([await call(second.key, '/users'), await call(second.key, '/users')], [200, 200], 'another key with the same policy has its own')
  })

  t.test('a changed policy applies at once to the keys it covers', async (t) => {
    const key = await stack.createKey(['users:list'], { policies: [{ name: 'changing', kind: 'rate', limit: 2, window_seconds: 60, partition: 'key' }] })
    t.same(await statusesOf(gateway, [as(key.key), as(key.key), as(key.key)]), [200, 200, 429])
    const changed = await stack.admin('PATCH', `/admin/keys/${key.id}`, { policies: [{ name: 'changing', kind: 'rate', limit: 5, window_seconds: 60, partition: 'key' }] })
    t.equal(changed.status, 200)
    const seen = await pollUntil(async () => (await gateway.call('/users?per_page=1', as(key.key))).status === 200, { timeoutMs: 5_000 })
    t.not(seen, null, 'the raised limit is in force (a new count: the limit is part of it)')
    t.same(parseFieldList((await gateway.call('/users?per_page=1', as(key.key))).headers['ratelimit-policy']).get('changing'), { q: 5, w: 60 })
  })
})

t.test('a quota survives a Redis restart: identity keeps the count', async (t) => {
  const redis = await startPrivateRedis(t)
  const stack = await startStack(t, { checkLookups: false, redis, gateway: { keyUsageFlushSeconds: 0.2 } })
  const quota = { name: 'lifetime', kind: 'quota', limit: 5, period: 'never', partition: 'key' }
  const key = await stack.createKey(['users:list'], { policies: [quota] })
  const { gateway } = stack

  t.same(await statusesOf(gateway, [as(key.key), as(key.key), as(key.key)]), [200, 200, 200])
  t.equal(parseFieldList((await gateway.call('/users?per_page=1', { ...as(key.key), method: 'HEAD' })).headers.ratelimit).get('lifetime')?.r, 1, 'four used')
  // The uses reach identity within the report interval.
  await new Promise((resolve) => setTimeout(resolve, 800))
  await redis.stop()
  const down = await gateway.call('/users?per_page=1', as(key.key))
  t.equal(down.status, 503, 'a quota fails closed while Redis is lost')
  t.equal(down.body.code, 'traffic_control_unavailable')
  await redis.restart()
  const back = await pollUntil(async () => (await gateway.call('/users?per_page=1', as(key.key))).status !== 503, { timeoutMs: 10_000, intervalMs: 100 })
  t.not(back, null, 'Redis is back (empty: nothing is persisted)')
  // That request was the fifth use: the count started again from identity's four.
  const after = await gateway.call('/users?per_page=1', as(key.key))
  t.equal(after.status, 429, 'the sixth use is refused: the count did not restart at zero')
  t.equal(after.body.code, 'quota_exhausted')
  const retryAfter = Number(after.headers['retry-after'])
  t.ok(retryAfter > 86_000 && retryAfter <= 86_400, `a quota that never refills: retry after about a day (${retryAfter} s; more uses come from a changed policy)`)
  t.same(after.body.policies, [{ name: 'lifetime', kind: 'quota', limit: 5, period: 'never', partition: 'key', retry_after: retryAfter }])

  const other = await startGateway(t, { ...stack.gatewaySetup, upstreams: upstreamsWithPolicies(stack.upstreamUrl, {}), options: { keyUsageFlushSeconds: 0.2 } })
  t.equal((await other.call('/users?per_page=1', as(key.key))).status, 429, 'another replica sees the same count')
})

t.test('without Redis, a gateway started again picks the quota count up from identity', async (t) => {
  const stack = await startStack(t, { checkLookups: false })
  const setup = { identity: stack.gatewaySetup.identity, clock: stack.gatewaySetup.clock, upstreams: upstreamsWithPolicies(stack.upstreamUrl, {}), options: { keyUsageFlushSeconds: 0.2 } }
  const key = await stack.createKey(['users:list'], { policies: [{ name: 'daily', kind: 'quota', limit: 4, period: 'day', partition: 'key' }] })
  const first = await startGateway(t, setup)
  t.same(await statusesOf(first, [as(key.key), as(key.key), as(key.key)]), [200, 200, 200])
  const policy = parseFieldList((await first.call('/users?per_page=1', { ...as(key.key), method: 'HEAD' })).headers['ratelimit-policy']).get('daily')
  t.same(policy, { q: 4, w: 86400 }, 'a daily quota\'s window is a day')
  await first.app.close()
  const second = await startGateway(t, setup)
  t.same(await statusesOf(second, [as(key.key), as(key.key)]), [429, 429], 'the four uses were reported on close and read back')
})
