import t, { type Test } from 'tap'
import { assertJson, assertProblem } from '../helpers/assert.js'
import { runPortierHere } from '../helpers/cli.js'
import { mockUpstreams, startGateway, startStack, type Stack, type TestGateway } from '../helpers/gateway.js'
import { VERIFY_PATH, identityRequests, keyCacheCount, metricSum, pollUntil, sleep } from '../helpers/gateway-auth.js'
import { iso } from '../helpers/identity.js'

/**
 * API key uses are counted where requests arrive, at the gateway, cached or not, and
 * reported to identity in batches (gateway/usage/): identity's key view shows every
 * request a key was let through for, per secret, with the last one's time, route
 * pattern and client address. A verification is not a use of its own. Identity going
 * down and a gateway process stopped by SIGTERM are in test/faults/key-usage.
 */

const FAST = { keyUsageFlushSeconds: 0.2 }
const withKey = (key: string, headers: Record<string, string> = {}): { headers: Record<string, string> } => ({ headers: { 'x-api-key': key, ...headers } })

/** `count` requests with `key` through `gateway`, `workers` at a time: asserts they were all answered 200. */
async function use (t: Test, gateway: TestGateway, key: string, count: number, path = '/users?per_page=1', workers = 8): Promise<void> {
  let sent = 0
  const statuses = new Map<number, number>()
  await Promise.all(Array.from({ length: workers }, async () => {
    while (sent < count) {
      sent++
      const { status } = await gateway.call(path, withKey(key))
      statuses.set(status, (statuses.get(status) ?? 0) + 1)
    }
  }))
  t.same(Object.fromEntries(statuses), { 200: count }, `${count} requests to ${path}, all answered 200`)
}

async function keyView (s: Stack, id: string): Promise<Record<string, any>> {
  return (await s.admin('GET', `/admin/keys/${id}`)).body.api_key
}

/** Identity's view of the key once `done` holds of it, or after `timeoutMs` whatever it shows; and how long that took. */
async function viewOnce (s: Stack, id: string, done: (view: Record<string, any>) => boolean, timeoutMs = 5_000): Promise<{ view: Record<string, any>, ms: number | null }> {
  let view: Record<string, any> = {}
  const ms = await pollUntil(async () => done(view = await keyView(s, id)), { timeoutMs, intervalMs: 100 })
  return { view, ms }
}

const totalUses = (view: Record<string, any>): number => (view.secrets as Array<{ use_count: number }>).reduce((n, s) => n + s.use_count, 0)

t.test('key uses counted at the gateway', async (t) => {
  const s = await startStack(t)

  await t.test('1000 requests with one key, all but the first from the cache: identity shows 1000 uses within 10 s', async (t) => {
    const key = await s.createKey(['users:list', 'debug:read'])
    const before = { verifies: await identityRequests(s, VERIFY_PATH), hits: await keyCacheCount(s.gateway, 'l1', 'hit') }
    assertJson(t, await s.gateway.call('/users?per_page=1', withKey(key.key)), 200, 'the first request: a cache miss, verified by identity')
    await use(t, s.gateway, key.key, 499)
    // The last use is the one shown: later in time, on another route.
    s.clock.advance(1_000)
    const lastAt = s.clock.now()
    await use(t, s.gateway, key.key, 500, '/echo/usage')
    const lastSentAt = performance.now()
    t.equal(await identityRequests(s, VERIFY_PATH), before.verifies + 1, 'identity verified the key once')
    t.equal(await keyCacheCount(s.gateway, 'l1', 'hit'), before.hits + 999, 'the 999 others were answered from the L1 cache')

    // The default interval (5 s): the uses of the last one are reported by the next.
    const { view, ms } = await viewOnce(s, key.id, (v) => totalUses(v) >= 1000, 10_000)
    t.ok(ms !== null && performance.now() - lastSentAt <= 10_000, `identity shows them within 10 s of the last request (${Math.round(performance.now() - lastSentAt)} ms)`)
    const lastUse = { last_used_at: iso(lastAt), last_used_route: '/echo/*', last_used_ip: '127.0.0.1' }
    t.match(view, { ...lastUse, secrets: [{ state: 'current', use_count: 1000, ...lastUse }] },
      '1000 uses, not 1001: the verification was not counted besides its request; the last use\'s time, route pattern and address')

    const shown = await runPortierHere(['keys', 'show', key.id], s.cliEnv)
    t.equal(shown.code, 0, 'portier keys show', { stderr: shown.stderr })
    t.match(JSON.parse(shown.stdout), { api_key: { id: key.id, ...lastUse, secrets: [{ use_count: 1000, ...lastUse }] } }, 'the CLI shows the same')
  })

  await t.test('a first use, verified by identity, counts once; refused requests and tokens are not key uses', async (t) => {
    const g = await s.addGateway(FAST)
    const key = await s.createKey(['users:list'])
    const other = await s.createKey(['users:list'])
    const okBefore = await metricSum(g, 'portier_gateway_key_usage_flushes_total', { outcome: 'ok' })
    assertJson(t, await g.call('/users?per_page=1', withKey(key.key)), 200, 'one use (a cache miss)')
    assertProblem(t, await g.call('/tasks', withKey(key.key)), 403, 'permission_denied', 'a request the key may not make')
    assertProblem(t, await g.call('/nowhere', withKey(key.key)), 404, 'not_found', 'a path no route matches')
    assertProblem(t, await g.call('/users', withKey(other.key, { authorization: 'Bearer x' })), 400, 'conflicting_credentials', 'a key beside a token')
    const tokens = await s.login()
    assertJson(t, await g.call('/users?per_page=1', { bearer: tokens.access_token }), 200, 'a token')
    const { ms } = await viewOnce(s, key.id, (v) => totalUses(v) >= 1)
    t.ok(ms !== null, 'the use is reported')
    await sleep(1_000) // five more intervals: nothing else arrives
    t.match(await keyView(s, key.id), { last_used_route: '/users', secrets: [{ use_count: 1 }] }, 'one use: the refused ones are not')
    t.match(await keyView(s, other.id), { last_used_at: null, secrets: [{ use_count: 0 }] }, 'the key refused beside a token was not used')
    t.ok(await metricSum(g, 'portier_gateway_key_usage_flushes_total', { outcome: 'ok' }) > okBefore, 'flushes counted as ok')
  })

  await t.test('during a rotation the old and the new secret are counted apart', async (t) => {
    const g = await s.addGateway(FAST)
    const key = await s.createKey(['users:list'])
    await use(t, g, key.key, 7)
    s.clock.advance(1_000) // the new secret is the later one (the view lists the newest first)
    const rotated = await s.admin('POST', `/admin/keys/${key.id}/rotate`)
    assertJson(t, rotated, 200, 'rotated')
    const newKey = rotated.body.key as string
    const oldAgain = await g.call('/users?per_page=1', withKey(key.key))
    t.ok(oldAgain.headers.deprecation !== undefined, 'the old secret is in its grace period')
    await use(t, g, key.key, 12)
    await use(t, s.gateway, newKey, 21)
    await use(t, g, newKey, 4)
    const { view, ms } = await viewOnce(s, key.id, (v) => totalUses(v) >= 45, 10_000)
    t.ok(ms !== null, 'every use reported, from both gateways')
    t.match(view, {
      rotation: { old_key_prefix: key.key.slice(0, 16), old_secret_use_count: 20 },
      secrets: [{ state: 'current', use_count: 25 }, { state: 'grace', use_count: 20 }]
    }, 'old secret: 7 + 1 + 12; new secret: 21 + 4')
  })

  await t.test('the client address is the one the trusted proxy chain gives, as for forwarded headers', async (t) => {
    const behindProxy = await startGateway(t, { ...s.gatewaySetup, upstreams: mockUpstreams(s.upstreamUrl), trustProxy: '127.0.0.1', options: FAST })
    const direct = await s.addGateway(FAST)
    const proxied = await s.createKey(['users:list'])
    const spoofed = await s.createKey(['users:list'])
    assertJson(t, await behindProxy.call('/users?per_page=1', withKey(proxied.key, { 'x-forwarded-for': '203.0.113.9' })), 200)
    assertJson(t, await direct.call('/users?per_page=1', withKey(spoofed.key, { 'x-forwarded-for': '203.0.113.9' })), 200)
    t.match((await viewOnce(s, proxied.id, (v) => v.last_used_ip !== null)).view, { last_used_ip: '203.0.113.9' }, 'behind a trusted proxy: the client it names')
    t.match((await viewOnce(s, spoofed.id, (v) => v.last_used_ip !== null)).view, { last_used_ip: '127.0.0.1' }, 'without one: the peer, whatever X-Forwarded-For says')
  })

  await t.test('closing the app reports what is pending', async (t) => {
    const g = await startGateway(t, { ...s.gatewaySetup, upstreams: mockUpstreams(s.upstreamUrl), options: { keyUsageFlushSeconds: 300 } })
    const key = await s.createKey(['users:list'])
    await use(t, g, key.key, 25)
    await sleep(300)
    t.match(await keyView(s, key.id), { secrets: [{ use_count: 0 }] }, 'nothing reported yet: the interval is 5 minutes')
    await g.app.close()
    t.match(await keyView(s, key.id), { last_used_route: '/users', secrets: [{ use_count: 25 }] }, 'reported by the time close() resolved')
  })

  await t.test('beyond keyUsageMaxKeys a new key is not counted: logged, and counted in a metric', async (t) => {
    const g = await startGateway(t, { ...s.gatewaySetup, upstreams: mockUpstreams(s.upstreamUrl), options: { keyUsageFlushSeconds: 300, keyUsageMaxKeys: 1 } })
    const first = await s.createKey(['users:list'])
    const second = await s.createKey(['users:list'])
    await use(t, g, first.key, 3)
    await use(t, g, second.key, 4)
    await g.app.close()
    t.match(await keyView(s, first.id), { secrets: [{ use_count: 3 }] }, 'the first key is counted')
    t.match(await keyView(s, second.id), { secrets: [{ use_count: 0 }] }, 'the second, beyond the bound, is not')
    t.equal(await metricSum(g, 'portier_gateway_key_usage_dropped_total', { reason: 'overflow' }), 4, 'its 4 uses counted as dropped')
    t.ok(g.logs.some((line) => line.level === 40 && line.dropped === 4 && String(line.msg).startsWith('key uses not counted')), 'and logged')
  })
})
