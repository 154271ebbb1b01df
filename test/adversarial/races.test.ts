import t from 'tap'
import type { Test } from 'tap'
import { assertJson, assertProblem, assertStatus, PROBLEM_JSON } from '../helpers/assert.js'
import { startStack, type Stack, type TestGateway } from '../helpers/gateway.js'
import { assertRefused, keyCacheCount, pollUntil, sleep } from '../helpers/gateway-auth.js'
import type { HttpAnswer } from '../helpers/http.js'
import { watchForLeaks } from '../helpers/leak-watch.js'
import { sidOf, type SessionTokens } from '../helpers/session-setup.js'

/**
 * Races, through the gateway over real sockets: 50 concurrent refreshes of
 * one refresh token, 20 concurrent creations of one key name, a key rotated while
 * traffic keeps using its old secret on two gateway replicas, and a key revoked while
 * traffic hammers it on both (a miss racing the eviction must not bring it back).
 *
 * The refresh rule (identity/services/sessions.ts): the first refresh inside the
 * SQLite transaction wins; a later use of the same token inside the reuse grace is
 * `refresh_token_superseded` and harmless, outside it (or with no grace at all) it is
 * reuse, and the whole session is revoked, so the winner's fresh token set dies
 * with it (RFC 9700 §4.14.2: the family of the reused token), on every gateway.
 */

const leaks = watchForLeaks()
const RACERS = 50
const GRACE_SECONDS = 10
/** Key and session changes must reach every gateway within 1 s; the polls allow three. */
const PROPAGATION_MS = 1_000
const REFRESH_PATHS = ['/tokens', '/jetons'] as const

async function stack (t: Test, env: Record<string, string> = {}): Promise<Stack> {
  const s = await startStack(t, { env })
  leaks.source({ name: 'gateway', text: s.gateway.logText })
  leaks.source({ name: 'identity', text: s.logText })
  leaks.secret(s.adminToken, s.serviceToken, s.user.password)
  return s
}

async function addReplica (s: Stack): Promise<TestGateway> {
  const replica = await s.addGateway()
  leaks.source({ name: 'replica', text: replica.logText })
  return replica
}

async function loginThroughGateway (t: Test, s: Stack): Promise<SessionTokens> {
  const answer = await s.gateway.call('/sessions', { body: { session: s.user } })
  assertJson(t, answer, 201, 'login through the gateway')
  leaks.secret(answer.body.access_token, answer.body.refresh_token)
  return { ...answer.body, sid: sidOf(answer.body.access_token) }
}

const refreshThrough = async (g: TestGateway, bearer: string, refreshToken: string, path: string = '/tokens'): Promise<HttpAnswer> =>
  await g.call(path, { bearer, body: { refresh_token: refreshToken } })

/** RACERS refreshes of one token set, all sent at once, alternating /tokens and /jetons and spread over `gateways`. */
async function raceRefreshes (t: Test, gateways: TestGateway[], tokens: SessionTokens): Promise<{ winner: SessionTokens, losers: HttpAnswer[] }> {
  const answers = await Promise.all(Array.from({ length: RACERS }, async (_, i) =>
    await refreshThrough(gateways[i % gateways.length] as TestGateway, tokens.access_token, tokens.refresh_token, REFRESH_PATHS[Math.floor(i / gateways.length) % 2])))
  const winners = answers.filter((a) => a.status === 200)
  for (const w of winners) leaks.secret(w.body.access_token, w.body.refresh_token)
  t.equal(winners.length, 1, `exactly one of ${RACERS} refreshes is 200`, { statuses: answers.map((a) => a.status) })
  t.equal(new Set(winners.map((w) => w.body.refresh_token)).size, 1, 'exactly one distinct new refresh token was handed out')
  const winner = winners[0] as HttpAnswer
  t.not(winner.body.refresh_token, tokens.refresh_token, 'the refresh token rotated')
  t.equal(sidOf(winner.body.access_token), tokens.sid, 'the new set belongs to the same session')
  const losers = answers.filter((a) => a !== winner)
  t.equal(losers.length, RACERS - 1)
  t.ok(losers.every((l) => l.status === 401 && l.headers['content-type'] === PROBLEM_JSON), 'every loser is a 401 problem+json',
    { losers: losers.map((l) => `${l.status} ${String(l.body?.code)}`) })
  return { winner: { ...winner.body, sid: tokens.sid }, losers }
}

/** Identity's side: the user has exactly one session, and it holds exactly `refreshTokens` refresh tokens; `successes` refreshes counted. */
async function assertIssued (t: Test, s: Stack, sid: string, expected: { refreshTokens: number, successes: number, status: string }): Promise<void> {
  const sessions = await s.sessions(s.userId)
  t.same(sessions.map((x) => x.id), [sid], 'identity holds one session for the user: the race opened none')
  t.equal(sessions[0]?.status, expected.status, `the session is ${expected.status}`)
  const rows = s.identity.db.prepare('SELECT count(*) FROM refresh_tokens WHERE session_id = ?').pluck().get(sid)
  t.equal(rows, expected.refreshTokens, `identity stored ${expected.refreshTokens} refresh tokens for the session: one new token set per winning refresh`)
  const metrics = await s.admin('GET', '/metrics')
  const successes = /^portier_identity_refreshes_total\{outcome="success"\} (\d+)$/m.exec(metrics.text)?.[1]
  t.equal(Number(successes ?? 0), expected.successes, `identity counted ${expected.successes} successful refreshes`)
}

/** Polls the gateway with `bearer` until it is refused (401), asserting that happens within the bound. */
async function assertTokenRefused (t: Test, g: TestGateway, bearer: string, label: string): Promise<void> {
  let last: HttpAnswer | undefined
  const ms = await pollUntil(async () => (last = await g.call('/users', { bearer })).status === 401, { timeoutMs: 3 * PROPAGATION_MS })
  t.ok(ms !== null && ms <= PROPAGATION_MS, `${label}: refused at the gateway within ${PROPAGATION_MS} ms (${String(ms)} ms)`)
  if (last !== undefined) {
    assertRefused(t, last, 'invalid_token', label)
    t.match(last.body.detail, /session .*revoked/, `${label}: the detail says the session was revoked`)
  }
}

t.test(`${RACERS} concurrent refreshes, no reuse grace: one winner, then the whole session is revoked`, async (t) => {
  const s = await stack(t, { IDENTITY_REFRESH_REUSE_GRACE_SECONDS: '0' })
  const replicas: Array<[string, TestGateway]> = [['gateway', s.gateway], ['replica', await addReplica(s)]]
  const first = await loginThroughGateway(t, s)
  for (const [name, g] of replicas) assertJson(t, await g.call('/users', { bearer: first.access_token }), 200, `${name}: the session works before the race`)

  const { winner, losers } = await raceRefreshes(t, replicas.map(([, g]) => g), first)
  const codes = new Set(losers.map((l) => l.body.code))
  t.ok([...codes].every((c) => c === 'refresh_token_reused' || c === 'session_revoked'), 'losers are reuse, or hit the session reuse just revoked', { codes: [...codes] })
  t.ok(codes.has('refresh_token_reused'), 'the second use was detected as reuse')
  await assertIssued(t, s, first.sid, { refreshTokens: 2, successes: 1, status: 'revoked' })
  t.equal((await s.session(first.access_token)).revoked_reason, 'refresh_token_reuse', 'revoked for reuse')

  // The family rule: with the session gone, the winner's fresh set is worth nothing.
  for (const [name, g] of replicas) {
    await assertTokenRefused(t, g, winner.access_token, `${name}: the winner's new access token`)
    await assertTokenRefused(t, g, first.access_token, `${name}: the original access token`)
    assertProblem(t, await refreshThrough(g, winner.access_token, winner.refresh_token), 401, 'session_revoked', `${name}: the winner's new refresh token`)
  }
  await assertIssued(t, s, first.sid, { refreshTokens: 2, successes: 1, status: 'revoked' })
})

t.test(`${RACERS} concurrent refreshes, ${GRACE_SECONDS} s reuse grace: one winner, the rest superseded; reuse after the window revokes the family`, async (t) => {
  const s = await stack(t, { IDENTITY_REFRESH_REUSE_GRACE_SECONDS: String(GRACE_SECONDS) })
  const first = await loginThroughGateway(t, s)

  const { winner, losers } = await raceRefreshes(t, [s.gateway], first)
  t.same(losers.map((l) => l.body.code), losers.map(() => 'refresh_token_superseded'), 'every loser is refresh_token_superseded, none revoked anything')
  for (const loser of losers.slice(0, 2)) assertProblem(t, loser, 401, 'refresh_token_superseded', 'a loser')
  await assertIssued(t, s, first.sid, { refreshTokens: 2, successes: 1, status: 'active' })

  assertJson(t, await s.gateway.call('/users', { bearer: winner.access_token }), 200, "the winner's access token works at the gateway")
  const next = await refreshThrough(s.gateway, winner.access_token, winner.refresh_token)
  assertJson(t, next, 200, "the winner's refresh token works")
  leaks.secret(next.body.access_token, next.body.refresh_token)
  assertJson(t, await s.gateway.call('/users', { bearer: next.body.access_token }), 200, 'and so does the set it gave')
  assertProblem(t, await refreshThrough(s.gateway, first.access_token, first.refresh_token), 401, 'refresh_token_superseded',
    'the original token inside the window: still superseded, nothing revoked')
  t.equal((await s.session(first.access_token)).status, 'active')

  s.clock.advance((GRACE_SECONDS + 1) * 1000)
  assertProblem(t, await refreshThrough(s.gateway, first.access_token, first.refresh_token), 401, 'refresh_token_reused',
    'the original token after the window: reuse')
  t.match(await s.session(first.access_token), { status: 'revoked', revoked_reason: 'refresh_token_reuse' }, 'the session is revoked')
  await assertTokenRefused(t, s.gateway, next.body.access_token, 'the newest access token of the family')
  await assertTokenRefused(t, s.gateway, winner.access_token, "the race winner's access token")
  assertProblem(t, await refreshThrough(s.gateway, next.body.access_token, next.body.refresh_token), 401, 'session_revoked',
    'the newest refresh token of the family')
  await assertIssued(t, s, first.sid, { refreshTokens: 3, successes: 2, status: 'revoked' })
})

t.test('20 concurrent creations of one key name: one 201, nineteen 409, one row', async (t) => {
  const s = await stack(t)
  const before = (await s.admin('GET', '/admin/keys')).body.api_keys.length as number
  const expiresAt = new Date(s.clock.now() + 86_400_000).toISOString()
  const answers = await Promise.all(Array.from({ length: 20 }, async (_, i) =>
    await s.admin('POST', '/admin/keys', { name: 'raced-name', permissions: i % 2 === 0 ? ['users:list'] : ['tasks:list'], expires_at: expiresAt })))
  for (const a of answers) if (a.status === 201) leaks.secret(a.body.key)
  const created = answers.filter((a) => a.status === 201)
  const conflicts = answers.filter((a) => a.status === 409)
  t.equal(created.length, 1, 'one 201', { statuses: answers.map((a) => a.status) })
  t.equal(conflicts.length, 19, 'nineteen 409')
  for (const conflict of conflicts) assertProblem(t, conflict, 409, 'key_name_taken', 'a loser')
  t.ok(conflicts.every((c) => !('key' in c.body) && !c.text.includes('ptk_')), 'no loser carries a key')

  const listed = (await s.admin('GET', '/admin/keys')).body.api_keys as Array<Record<string, any>>
  t.equal(listed.length, before + 1, 'exactly one row was added')
  const rows = listed.filter((k) => k.name === 'raced-name')
  t.equal(rows.length, 1, 'one key of that name')
  const winner = created[0] as HttpAnswer
  t.equal(rows[0]?.id, winner.body.api_key.id, "it is the winner's")
  t.same(rows[0]?.permissions, winner.body.api_key.permissions, "with the winner's permissions")
  t.equal(s.identity.db.prepare('SELECT count(*) FROM api_key_secrets WHERE key_id = ?').pluck().get(winner.body.api_key.id), 1, 'one secret stored')
  const needs = winner.body.api_key.permissions[0] === 'users:list' ? '/users' : '/tasks'
  assertJson(t, await s.gateway.call(needs, { headers: { 'x-api-key': winner.body.key } }), 200, "the winner's key works through the gateway")
})

t.test('rotation with a grace period while traffic on two replicas keeps using the old secret: nothing fails', async (t) => {
  const s = await stack(t)
  const replicas: Array<[string, TestGateway]> = [['gateway', s.gateway], ['replica', await addReplica(s)]]
  const old = await s.createKey(['users:list'])
  leaks.secret(old.key)
  for (const [name, g] of replicas) assertJson(t, await g.call('/users', { headers: { 'x-api-key': old.key } }), 200, `${name}: the key works before`)

  interface Sample { gateway: string, sentAt: number, answer: HttpAnswer }
  const samples: Sample[] = []
  let running = true
  const loop = async (name: string, g: TestGateway): Promise<void> => {
    while (running) {
      const sentAt = performance.now()
      const answer = await g.call('/users?per_page=1', { headers: { 'x-api-key': old.key } })
      samples.push({ gateway: name, sentAt, answer })
    }
  }
  const WORKERS_PER_REPLICA = 4
  const loops = replicas.flatMap(([name, g]) => Array.from({ length: WORKERS_PER_REPLICA }, async () => await loop(name, g)))

  await sleep(300)
  const rotateSentAt = performance.now()
  const rotated = await s.admin('POST', `/admin/keys/${old.id}/rotate`, { grace_seconds: 60 })
  const rotatedAt = performance.now()
  assertJson(t, rotated, 200, 'rotated with a 60 s grace')
  leaks.secret(rotated.body.key)
  await sleep(PROPAGATION_MS + 500)
  running = false
  await Promise.all(loops)

  const failures = samples.filter((x) => x.answer.status !== 200)
  t.equal(failures.length, 0, `none of ${samples.length} requests with the old secret failed`,
    { failures: failures.slice(0, 5).map((f) => `${f.gateway} ${f.answer.status} ${f.answer.text}`) })
  const grace = rotated.body.api_key.rotation as { grace_until: string }
  t.equal(Date.parse(grace.grace_until), s.clock.now() + 60_000, 'the old secret is in its grace period for 60 s')
  const sunset = new Date(grace.grace_until).toUTCString()
  const deprecation = `@${Math.floor(s.clock.now() / 1000)}`

  for (const [name] of replicas) {
    const mine = samples.filter((x) => x.gateway === name)
    t.ok(mine.filter((x) => x.sentAt < rotateSentAt).length > 0 && mine.filter((x) => x.sentAt > rotatedAt).length > 0,
      `${name}: traffic ran before and after the rotation (${mine.length} requests)`)
    t.ok(mine.filter((x) => x.sentAt < rotateSentAt).every((x) => x.answer.headers.deprecation === undefined),
      `${name}: nothing sent before the rotation is marked deprecated`)
    const late = mine.filter((x) => x.sentAt > rotatedAt + PROPAGATION_MS)
    t.ok(late.length > 0, `${name}: ${late.length} requests sent more than ${PROPAGATION_MS} ms after the rotation`)
    t.ok(late.every((x) => x.answer.headers.deprecation === deprecation && x.answer.headers.sunset === sunset),
      `${name}: each of them carries Deprecation (${deprecation}) and Sunset (${sunset})`,
      { headers: late.filter((x) => x.answer.headers.sunset !== sunset).slice(0, 3).map((x) => x.answer.headers) })
    const firstMarked = mine.find((x) => x.answer.headers.deprecation !== undefined)
    t.ok(firstMarked !== undefined && mine.filter((x) => x.sentAt > (firstMarked?.sentAt ?? Infinity)).every((x) => x.answer.headers.sunset === sunset),
      `${name}: once one answer was marked, every later one is`)
  }

  for (const [name, g] of replicas) {
    // One verification when warmed, one after the rotation's eviction, one more if a miss was in flight across it.
    const asked = await keyCacheCount(g, 'identity', 'valid')
    const served = samples.filter((x) => x.gateway === name).length
    t.ok(asked <= 3, `${name}: the old secret, once verified after the rotation, is cached again: identity was asked ${asked} times for ${served + 1} requests`)
  }
  for (const [name, g] of replicas) {
    const fresh = await g.call('/users', { headers: { 'x-api-key': rotated.body.key } })
    assertJson(t, fresh, 200, `${name}: the new secret works`)
    t.equal(fresh.headers.deprecation, undefined, `${name}: and is not deprecated`)
  }
  // Every request with the old secret, before and after the rotation, on both replicas, as the gateways report them (every 5 s).
  const expected = samples.length + replicas.length
  let view: Record<string, any> = {}
  await pollUntil(async () => (view = (await s.admin('GET', `/admin/keys/${old.id}`)).body.api_key).rotation.old_secret_use_count >= expected,
    { timeoutMs: 15_000, intervalMs: 200 })
  t.equal(view.rotation.old_secret_use_count, expected, `ops see every use of the old secret still made: ${expected} requests, cached or not`)
})

t.test('revocation while traffic on two replicas hammers the key: refused within 1 s, and never accepted again', async (t) => {
  const s = await stack(t)
  const replicas: Array<[string, TestGateway]> = [['gateway', s.gateway], ['replica', await addReplica(s)]]
  const ROUNDS = 6
  const WORKERS_PER_REPLICA = 6
  const firstRefusals: number[] = []
  for (let round = 1; round <= ROUNDS; round++) {
    const key = await s.createKey(['users:list'])
    leaks.secret(key.key)
    const headers = { 'x-api-key': key.key }
    for (const [name, g] of replicas) assertJson(t, await g.call('/users?per_page=1', { headers }), 200, `round ${round}: ${name} accepts the key`)

    const samples: Array<{ gateway: string, sentAt: number, answeredAt: number, status: number }> = []
    let running = true
    const loops = replicas.flatMap(([name, g]) => Array.from({ length: WORKERS_PER_REPLICA }, async () => {
      while (running) {
        const sentAt = performance.now()
        const { status } = await g.call('/users?per_page=1', { headers })
        samples.push({ gateway: name, sentAt, answeredAt: performance.now(), status })
      }
    }))
    await sleep(50)
    const revokeSentAt = performance.now()
    assertStatus(t, await s.admin('POST', `/admin/keys/${key.id}/revoke`), 200, `round ${round}: revoked`)
    await sleep(PROPAGATION_MS)
    running = false
    await Promise.all(loops)

    for (const [name, g] of replicas) {
      const mine = samples.filter((x) => x.gateway === name)
      t.ok(mine.every((x) => x.status === 200 || x.status === 401), `round ${round}: ${name} answered only 200 or 401`, { statuses: [...new Set(mine.map((x) => x.status))] })
      const firstRefusal = mine.filter((x) => x.status === 401).sort((a, b) => a.answeredAt - b.answeredAt)[0]
      t.ok(firstRefusal !== undefined, `round ${round}: ${name} refused the key under load`)
      if (firstRefusal !== undefined) {
        firstRefusals.push(Math.round(firstRefusal.answeredAt - revokeSentAt))
        const flapped = mine.filter((x) => x.sentAt > firstRefusal.answeredAt && x.status === 200)
        t.equal(flapped.length, 0, `round ${round}: ${name} never accepted the key again once it had refused it (${mine.length} requests)`)
      }
      assertRefused(t, await g.call('/users?per_page=1', { headers }), 'invalid_api_key', `round ${round}: ${name} after the load`)
    }
  }
  const worst = Math.max(...firstRefusals)
  t.comment(`first refusal under load, from sending the revoke: worst ${worst} ms over ${firstRefusals.length} replica-rounds`)
  t.ok(firstRefusals.length === ROUNDS * replicas.length && worst <= PROPAGATION_MS,
    `the first refusal came within ${PROPAGATION_MS} ms of sending the revoke on every replica in every round (worst ${worst} ms)`)
})

await leaks.assertNoLeaks(t)
