import t from 'tap'
import { generateApiKey } from '../../common/api-key-format.js'
import { assertJson, assertProblem, assertStatus } from '../helpers/assert.js'
import { startStack, type TestGateway } from '../helpers/gateway.js'
import type { HttpAnswer } from '../helpers/http.js'
import { watchEvents } from '../helpers/events.js'
import { assertRefused, pollUntil, signToken, strangerSigner } from '../helpers/gateway-auth.js'
import { claimsOf } from '../helpers/session-setup.js'

/**
 * Degraded modes: with Redis down the gateway serves on L1 and identity
 * and never answers 5xx for what it can verify, then reconnects on its own; with
 * identity down, tokens and cached keys keep working and an uncached key is a 503
 * with Retry-After, never a 200 (fail closed).
 */

const OPTIONS = { keyCache: { l1TtlSeconds: 3_600, l2TtlSeconds: 3_600 }, revocationSyncSeconds: 3_600 }

const withKey = (key: string): { headers: Record<string, string> } => ({ headers: { 'x-api-key': key } })

async function readiness (gateway: TestGateway): Promise<HttpAnswer> {
  return await gateway.call('/readyz')
}

t.test('Redis down, then back', async (t) => {
  const s = await startStack(t, { gateway: OPTIONS })
  const { gateway } = s
  const shortL1 = await s.addGateway({ keyCache: { ...OPTIONS.keyCache, l1TtlSeconds: 1 } })
  const tokens = await s.login()
  const revokedDuringOutage = await s.login()
  const cached = await s.createKey(['users:list'])
  const revokedKey = await s.createKey(['users:list'])
  const [uncachedAtOnce, uncachedLater] = [await s.createKey(['users:list']), await s.createKey(['users:list'])]
  for (const [label, request] of [['key', withKey(cached.key)], ['token', { bearer: tokens.access_token }]] as const) {
    assertJson(t, await gateway.call('/users', request), 200, `before the outage: ${label}`)
  }
  assertJson(t, await shortL1.call('/users', withKey(revokedKey.key)), 200, 'before the outage: a key on the short-L1 replica')

  await s.redis.stop()
  const calls: Array<[string, () => Promise<HttpAnswer>]> = [
    ['an L1-cached key', async () => await gateway.call('/users', withKey(cached.key))],
    ['an access token', async () => await gateway.call('/users', { bearer: tokens.access_token })]
  ]
  // At once, before the gateway may have noticed the connection is gone.
  for (const [label, call] of [...calls, ['an uncached key', async () => await gateway.call('/users', withKey(uncachedAtOnce.key))]] as const) {
    assertJson(t, await call(), 200, `Redis just stopped: ${label}`)
  }
  const noticed = await pollUntil(async () => (await readiness(gateway)).body.checks?.redis === 'down')
  t.not(noticed, null, 'readiness reports Redis down')
  const ready = await readiness(gateway)
  assertStatus(t, ready, 200, 'still ready: degraded modes serve')
  t.equal(ready.body.status, 'degraded', 'status degraded')
  for (const [label, call] of [...calls, ['an uncached key', async () => await gateway.call('/users', withKey(uncachedLater.key))]] as const) {
    assertJson(t, await call(), 200, `Redis down: ${label}`)
  }
  assertJson(t, await gateway.call('/users', withKey(uncachedLater.key)), 200, 'Redis down: that key again, now from L1')
  assertJson(t, await gateway.call('/sessions', { body: { session: s.user } }), 201, 'Redis down: login through the gateway')

  // Changes made now cannot be announced: the L1 TTL and the catch-up after reconnection bound them.
  assertJson(t, await shortL1.call('/users', withKey(revokedKey.key)), 200, 'Redis down: a key on the short-L1 replica')
  const revokedAt = performance.now()
  assertStatus(t, await s.admin('POST', `/admin/keys/${revokedKey.id}/revoke`), 200, 'a key revoked during the outage')
  assertStatus(t, await s.admin('DELETE', `/admin/sessions/${revokedDuringOutage.sid}`), 200, 'a session revoked during the outage')
  const expired = await pollUntil(async () => (await shortL1.call('/users', withKey(revokedKey.key))).status === 401, { since: revokedAt, timeoutMs: 3_000 })
  t.ok(expired !== null && expired <= 1_500, `the revoked key is refused once its 1 s L1 entry expires (${String(expired)} ms)`)

  const restartedAt = performance.now()
  await s.redis.restart()
  const back = await pollUntil(async () => (await readiness(gateway)).body.checks?.redis === 'up', { since: restartedAt, timeoutMs: 5_000, intervalMs: 50 })
  t.ok(back !== null, `the gateway reconnected on its own: readiness shows Redis up ${String(back)} ms after the restart`)
  t.equal((await readiness(gateway)).body.status, 'ready', 'and ready again')
  const caughtUp = await pollUntil(async () => (await gateway.call('/users', { bearer: revokedDuringOutage.access_token })).status === 401,
    { since: restartedAt, timeoutMs: 5_000 })
  t.not(caughtUp, null, `the session revoked during the outage is refused after reconnection (${String(caughtUp)} ms after the restart)`)

  // Identity's own connection reconnects on its own schedule; an event it cannot publish is not the gateway's to hear.
  const events = await watchEvents(t, { redisUrl: s.redis.url, eventsChannel: s.config.eventsChannel })
  const published = await pollUntil(async () => {
    await s.admin('PUT', '/admin/roles/probe', { permissions: ['probe:read'] })
    return await events.next('role.changed', { timeoutMs: 200 }).then(() => true, () => false)
  }, { timeoutMs: 5_000 })
  t.not(published, null, 'identity publishes events again')

  for (const [label, request, change] of [
    ['a session revoked after the restart', { bearer: tokens.access_token }, async () => await s.admin('DELETE', `/admin/sessions/${tokens.sid}`)],
    ['a key revoked after the restart', withKey(cached.key), async () => await s.admin('POST', `/admin/keys/${cached.id}/revoke`)]
  ] as const) {
    assertJson(t, await gateway.call('/users', request), 200, `${label}: accepted before`)
    assertStatus(t, await change(), 200, label)
    const since = performance.now()
    const refused = await pollUntil(async () => (await gateway.call('/users', request)).status === 401, { since, timeoutMs: 3_000 })
    t.ok(refused !== null && refused <= 1_000, `${label}: refused within 1000 ms (${String(refused)} ms)`)
  }
})

t.test('identity down', async (t) => {
  const s = await startStack(t, { gateway: OPTIONS })
  const { gateway } = s
  const replica = await s.addGateway()
  const tokens = await s.login()
  const neverPresented = await s.login()
  const cached = await s.createKey(['users:list'])
  const uncached = await s.createKey(['users:list'])
  assertJson(t, await gateway.call('/users', withKey(cached.key)), 200, 'before: the key, now in L1 here and in L2')
  assertJson(t, await gateway.call('/users', { bearer: tokens.access_token }), 200, 'before: a token')

  await s.identity.close()
  for (const [name, url] of [['public', s.publicUrl], ['admin', s.adminUrl]]) {
    await t.rejects(fetch(`${url}/healthz`), `identity's ${name} listener is closed`)
  }

  assertJson(t, await gateway.call('/users', { bearer: tokens.access_token }), 200, 'a token seen before')
  assertJson(t, await gateway.call('/users', { bearer: neverPresented.access_token }), 200, 'a token never presented: verified with the cached JWKS')
  assertJson(t, await replica.call('/users', { bearer: tokens.access_token }), 200, 'a token on the replica')
  assertJson(t, await gateway.call('/users', withKey(cached.key)), 200, 'the key cached in L1')
  assertJson(t, await replica.call('/users', withKey(cached.key)), 200, 'the key on the replica, from L2')

  for (const [label, key] of [['an uncached key', uncached.key], ['a well-formed key of an unknown id', generateApiKey().key]] as const) {
    for (let attempt = 1; attempt <= 3; attempt++) {
      const started = performance.now()
      const answer = await gateway.call('/users', withKey(key))
      const ms = Math.round(performance.now() - started)
      assertProblem(t, answer, 503, 'identity_unavailable', `${label}, attempt ${attempt}`)
      t.match(answer.headers['retry-after'], /^[1-9]\d*$/, `${label}, attempt ${attempt}: Retry-After in seconds`)
      t.ok(ms < 2_500, `${label}, attempt ${attempt}: answered within identity's timeout (${ms} ms)`)
    }
  }
  assertRefused(t, await gateway.call('/users', withKey(`${uncached.key.slice(0, -1)}${uncached.key.endsWith('A') ? 'B' : 'A'}`)),
    'invalid_api_key', 'a malformed key is still refused without I/O')
  assertProblem(t, await gateway.call('/users'), 401, 'credentials_missing', 'no credential is still a 401')
  // Identity's own routes are proxied like any upstream: its absence is the upstream-down answer.
  assertProblem(t, await gateway.call('/sessions', { body: { session: s.user } }), 502, 'upstream_unavailable', 'login through the gateway')
  assertProblem(t, await gateway.call('/jetons', { bearer: tokens.access_token, body: { refresh_token: tokens.refresh_token } }), 502,
    'upstream_unavailable', 'refresh through the gateway')
  // Past the JWKS cooldown an unknown kid makes the gateway try identity, which fails: still a 401, not a 5xx.
  s.clock.advance(31_000)
  const forged = await signToken(await strangerSigner(), claimsOf(tokens.access_token))
  assertRefused(t, await gateway.call('/users', { bearer: forged }), 'invalid_token', 'a token of an unknown kid')
  assertJson(t, await gateway.call('/users', { bearer: tokens.access_token }), 200, 'and the cached keys still verify tokens')

  const ready = await readiness(gateway)
  assertStatus(t, ready, 200, 'readiness: still serving')
  t.match(ready.body, { status: 'degraded', checks: { identity: 'down', jwks: 'loaded' } }, 'readiness: degraded, identity down, JWKS loaded')
})
