import t from 'tap'
import type { Test } from 'tap'
import { Redis } from 'ioredis'
import { decodeProtectedHeader } from 'jose'
import { randomBase62 } from '../../common/random.js'
import { assertJson, assertProblem, assertStatus } from '../helpers/assert.js'
import { startStack, type TestGateway } from '../helpers/gateway.js'
import type { HttpAnswer, HttpRequest } from '../helpers/http.js'
import { claimsOf } from '../helpers/session-setup.js'
import {
  JWKS_PATH, assertRefused, identityRequests, pollUntil, signToken, strangerSigner
} from '../helpers/gateway-auth.js'

/**
 * Identity's invalidation events reaching every gateway replica (the promise:
 * "Revocation, rotation, expiry and permission changes reach every gateway within
 * 1 s while Redis is up"). Two replicas share one Redis. Cache TTLs and the
 * revocation sync period are an hour, so a refusal within a second can only come
 * from the event. Identity's clock is fake and does not move unless told: tokens
 * that must be refused after a permission change are issued in the same second as
 * the change (`iat` has one-second resolution: the hardest case), and tokens that
 * must be accepted after it are issued a second later.
 */

const PROPAGATION_LIMIT_MS = 1_000
const OPTIONS = {
  keyCache: { l1TtlSeconds: 3_600, l2TtlSeconds: 3_600 },
  revocationSyncSeconds: 3_600,
  jwksCooldownSeconds: 30
}

type Replicas = Array<[string, TestGateway]>

const withKey = (key: string): HttpRequest => ({ headers: { 'x-api-key': key } })

/**
 * Warms every replica with `request` on /users (a 200 each, so both hold it cached),
 * makes `change`, then polls all replicas at once until `refused` holds for the
 * answer, and asserts the slowest took at most 1 s. Timed from identity's answer to
 * the change: it publishes the event just before answering. Returns each replica's
 * refusing answer.
 */
async function assertReachesReplicas (t: Test, replicas: Replicas, label: string, request: HttpRequest,
  change: () => Promise<HttpAnswer>, refused: (answer: HttpAnswer) => boolean): Promise<HttpAnswer[]> {
  for (const [name, g] of replicas) assertJson(t, await g.call('/users', request), 200, `${label}: ${name} accepts before the change`)
  const answer = await change()
  t.ok(answer.status >= 200 && answer.status < 300, `${label}: the change is made (${answer.status})`, { body: answer.text })
  const since = performance.now()
  const last: HttpAnswer[] = []
  const times = await Promise.all(replicas.map(async ([, g], i) => await pollUntil(async () => {
    last[i] = await g.call('/users', request)
    return refused(last[i])
  }, { since, timeoutMs: 3 * PROPAGATION_LIMIT_MS })))
  const worst = times.includes(null) ? `not within ${3 * PROPAGATION_LIMIT_MS}` : String(Math.max(...times as number[]))
  t.ok(!times.includes(null) && Math.max(...times as number[]) <= PROPAGATION_LIMIT_MS,
    `${label}: every replica refuses within ${PROPAGATION_LIMIT_MS} ms of the change (worst ${worst} ms)`)
  return last
}

const is = (status: number) => (answer: HttpAnswer): boolean => answer.status === status

t.test('invalidation events reach every replica', async (t) => {
  const s = await startStack(t, { roles: { reader: ['users:list'], tasker: ['tasks:list'] }, gateway: OPTIONS })
  const replicas: Replicas = [['gateway', s.gateway], ['replica', await s.addGateway()]]
  const admin = async (method: string, path: string, body?: unknown): Promise<HttpAnswer> => await s.admin(method, path, body)
  const nextSecond = (): void => { s.clock.advance(1_000) }

  /** A new key, then POST /admin/keys/:id/<action>: refused everywhere within 1 s, the detail saying `reason`. */
  async function assertKeyActionReaches (t: Test, action: 'revoke' | 'disable', reason: RegExp): Promise<{ id: string, key: string }> {
    const key = await s.createKey(['users:list'])
    const answers = await assertReachesReplicas(t, replicas, action, withKey(key.key), async () => await admin('POST', `/admin/keys/${key.id}/${action}`), is(401))
    for (const answer of answers) {
      assertRefused(t, answer, 'invalid_api_key', `${action}: the key`)
      t.match(answer.body.detail, reason, `${action}: the detail says why`)
    }
    return key
  }

  await t.test('key revoked', async (t) => {
    await assertKeyActionReaches(t, 'revoke', /revoked/)
  })

  await t.test('key disabled, then enabled again', async (t) => {
    const key = await assertKeyActionReaches(t, 'disable', /disabled/)
    assertStatus(t, await admin('POST', `/admin/keys/${key.id}/enable`), 200, 'key enabled')
    const since = performance.now()
    // The refusal is negatively cached for a while; the key.enabled event must clear it.
    const times = await Promise.all(replicas.map(async ([, g]) => await pollUntil(async () => (await g.call('/users', withKey(key.key))).status === 200, { since })))
    t.ok(times.every((ms) => ms !== null && ms <= PROPAGATION_LIMIT_MS), `the re-enabled key works on every replica within 1 s (${times.join(', ')} ms)`)
  })

  await t.test('key permissions changed', async (t) => {
    const key = await s.createKey(['users:list'])
    const answers = await assertReachesReplicas(t, replicas, 'permission update', withKey(key.key),
      async () => await admin('PATCH', `/admin/keys/${key.id}`, { permissions: ['tasks:list'] }), is(403))
    for (const answer of answers) {
      assertProblem(t, answer, 403, 'permission_denied', 'users:list removed')
      t.equal(answer.body.missing_permission, 'users:list', 'the 403 names users:list')
    }
    for (const [name, g] of replicas) assertJson(t, await g.call('/tasks', withKey(key.key)), 200, `${name}: the new permission applies`)
  })

  await t.test('key rotated without grace', async (t) => {
    const key = await s.createKey(['users:list'])
    let fresh = ''
    const answers = await assertReachesReplicas(t, replicas, 'rotate, grace 0', withKey(key.key), async () => {
      const answer = await admin('POST', `/admin/keys/${key.id}/rotate`, { grace_seconds: 0 })
      fresh = answer.body.key
      return answer
    }, is(401))
    for (const answer of answers) {
      assertRefused(t, answer, 'invalid_api_key', 'the old secret')
      t.match(answer.body.detail, /retired by rotation/, 'the detail says retired')
    }
    for (const [name, g] of replicas) {
      const answer = await g.call('/users', withKey(fresh))
      assertJson(t, answer, 200, `${name}: the new secret works`)
      t.notOk('deprecation' in answer.headers, `${name}: and is not deprecated`)
    }
  })

  await t.test('session revoked by an admin', async (t) => {
    const tokens = await s.login()
    const answers = await assertReachesReplicas(t, replicas, 'admin session revoke', { bearer: tokens.access_token },
      async () => await admin('DELETE', `/admin/sessions/${tokens.sid}`), is(401))
    for (const answer of answers) {
      assertRefused(t, answer, 'invalid_token', 'the revoked session\'s token')
      t.match(answer.body.detail, /session .*revoked/, 'the detail says the session was revoked')
    }
  })

  await t.test('session ended by logout', async (t) => {
    const tokens = await s.login()
    const answers = await assertReachesReplicas(t, replicas, 'logout', { bearer: tokens.access_token },
      async () => await s.logout(tokens.access_token), is(401))
    for (const answer of answers) assertRefused(t, answer, 'invalid_token', 'the logged-out session\'s token')
  })

  /**
   * A change to the user's permissions: their token, issued in the same second (the
   * hardest case for a one-second `iat`), is refused on every replica within 1 s,
   * saying why; a token refreshed a second later carries the new permissions, which
   * `checkFresh` checks on each replica; `restore` then undoes the change.
   */
  async function assertPermissionChange (t: Test, label: string, change: () => Promise<HttpAnswer>,
    checkFresh: (name: string, g: TestGateway, token: string) => Promise<void>, restore: () => Promise<HttpAnswer>): Promise<void> {
    const tokens = await s.login()
    const answers = await assertReachesReplicas(t, replicas, label, { bearer: tokens.access_token }, change, is(401))
    for (const answer of answers) {
      assertRefused(t, answer, 'invalid_token', `${label}: a token issued before the change`)
      t.match(answer.body.detail, /permissions .*changed/, `${label}: the detail says the permissions changed`)
    }
    nextSecond()
    const refreshed = await s.refresh(tokens)
    assertJson(t, refreshed, 200, `${label}: refresh a second later`)
    for (const [name, g] of replicas) await checkFresh(name, g, refreshed.body.access_token)
    assertStatus(t, await restore(), 200, `${label}: undone`)
    nextSecond()
  }

  await t.test('user roles changed', async (t) => {
    await assertPermissionChange(t, 'user roles changed', async () => await admin('PUT', `/admin/users/${s.userId}/roles`, { roles: ['tasker'] }),
      async (name, g, token) => {
        assertJson(t, await g.call('/tasks', { bearer: token }), 200, `${name}: the fresh token carries the new role`)
        assertProblem(t, await g.call('/users', { bearer: token }), 403, 'permission_denied', `${name}: and not the removed one`)
      },
      async () => await admin('PUT', `/admin/users/${s.userId}/roles`, { roles: ['reader', 'tasker'] }))
  })

  await t.test('role permissions changed', async (t) => {
    await assertPermissionChange(t, 'role changed', async () => await admin('PUT', '/admin/roles/reader', { permissions: ['users:read'] }),
      async (name, g, token) => {
        assertProblem(t, await g.call('/users', { bearer: token }), 403, 'permission_denied', `${name}: the fresh token lacks users:list`)
      },
      async () => await admin('PUT', '/admin/roles/reader', { permissions: ['users:list'] }))
  })

  // Before any other gateway starts: the JWKS fetches counted here are the two replicas'.
  await t.test('signing key rotated; a flood of unknown kids is rate-limited', async (t) => {
    const before = await s.login()
    for (const [name, g] of replicas) assertJson(t, await g.call('/users', { bearer: before.access_token }), 200, `${name}: a token of the current key`)
    const fetches = await identityRequests(s, JWKS_PATH)
    assertStatus(t, await admin('POST', '/admin/signing-keys/rotate'), 200, 'signing key rotated')
    const waited = await pollUntil(async () => await identityRequests(s, JWKS_PATH) >= fetches + replicas.length, { timeoutMs: PROPAGATION_LIMIT_MS })
    t.not(waited, null, `each replica re-read the JWKS on the signing_key.rotated event (${String(waited)} ms)`)

    const after = await s.login()
    t.not(decodeProtectedHeader(after.access_token).kid, decodeProtectedHeader(before.access_token).kid, 'the new token names the new key')
    for (const [name, g] of replicas) {
      assertJson(t, await g.call('/users', { bearer: after.access_token }), 200, `${name}: a token of the new key`)
      assertJson(t, await g.call('/users', { bearer: before.access_token }), 200, `${name}: a token of the retired key, still published`)
    }
    t.equal(await identityRequests(s, JWKS_PATH), fetches + replicas.length, 'the new kid was known already: no further JWKS fetch')

    const stranger = await strangerSigner()
    const claims = claimsOf(after.access_token)
    const [[, gateway]] = replicas as [[string, TestGateway]]
    const flood = async (round: string): Promise<void> => {
      const forged = await Promise.all(Array.from({ length: 50 }, async () => await signToken({ ...stranger, kid: randomBase62(43) }, claims)))
      const answers = await Promise.all(forged.map(async (token) => await gateway.call('/users', { bearer: token })))
      t.same(answers.map((a) => [a.status, a.body.code]), Array(50).fill([401, 'invalid_token']), `${round}: 50 tokens with random kids, all 401 invalid_token`)
    }
    let count = await identityRequests(s, JWKS_PATH)
    await flood('within the cooldown of the event\'s fetch')
    t.equal(await identityRequests(s, JWKS_PATH), count, 'no JWKS fetch: the event\'s fetch started the 30 s cooldown')
    for (const round of ['31 s later', '62 s later']) {
      s.clock.advance(31_000)
      count = await identityRequests(s, JWKS_PATH)
      await flood(round)
      t.equal(await identityRequests(s, JWKS_PATH), count + 1, `${round}: one JWKS fetch for the whole flood`)
    }
  })

  await t.test('a gateway started after a revocation refuses the revoked session', async (t) => {
    const tokens = await s.login()
    const [[, gateway]] = replicas as [[string, TestGateway]]
    assertStatus(t, await admin('DELETE', `/admin/sessions/${tokens.sid}`), 200, 'session revoked')
    t.not(await pollUntil(async () => (await gateway.call('/users', { bearer: tokens.access_token })).status === 401), null, 'the running gateway applied it')
    const late = await s.addGateway()
    assertRefused(t, await late.call('/users', { bearer: tokens.access_token }), 'invalid_token', 'a gateway started later')

    // Without the shared Redis set, identity's revocation feed alone must tell a new gateway.
    const other = await s.login()
    assertStatus(t, await admin('DELETE', `/admin/sessions/${other.sid}`), 200, 'another session revoked')
    t.not(await pollUntil(async () => (await gateway.call('/users', { bearer: other.access_token })).status === 401), null, 'the running gateway applied it')
    const redis = new Redis(s.redis.url)
    t.teardown(() => redis.disconnect())
    t.equal(await redis.del('portier:revoked-sessions'), 1, 'the shared revocation set is gone')
    const later = await s.addGateway()
    assertRefused(t, await later.call('/users', { bearer: other.access_token }), 'invalid_token', 'a gateway started later, Redis set emptied')
    assertJson(t, await later.call('/users', { bearer: (await s.login()).access_token }), 200, 'control: it accepts a live session')
  })

  await t.test('user disabled', async (t) => {
    const tokens = await s.login()
    nextSecond()
    const answers = await assertReachesReplicas(t, replicas, 'user disabled', { bearer: tokens.access_token },
      async () => await admin('POST', `/admin/users/${s.userId}/disable`), is(401))
    for (const answer of answers) assertRefused(t, answer, 'invalid_token', 'the disabled user\'s token')
  })
})
