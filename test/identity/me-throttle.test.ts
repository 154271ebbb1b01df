import t, { type Test } from 'tap'
import { join } from 'node:path'
import { assertProblem, assertStatus } from '../helpers/assert.js'
import { fakeClock, startIdentity, tempDir } from '../helpers/identity.js'
import { adminClient } from '../helpers/http.js'
import { startRedis } from '../helpers/redis.js'
import { openSession } from '../helpers/session-setup.js'
import { addMember, createOwnKey, daysFrom, meCall, PASSWORD, startWithMember, type MeCall } from '../helpers/self-service.js'

/**
 * Key creations and rotations are counted per user on the traffic engine (a sliding
 * window of an hour): beyond IDENTITY_SELF_SERVICE_KEY_CHANGES_PER_HOUR, 429
 * key_changes_throttled with Retry-After until the oldest change leaves the window.
 * With Redis the count is shared by every identity process.
 */

const HOUR_MS = 3_600_000
const PER_HOUR = 4

/** One change: a creation (odd) or a rotation of `keyId` (even), so that both count alike. */
async function change (me: MeCall, n: number, keyId: string, clock: { now: () => number }) {
  return n % 2 === 1
    ? await me('POST', '/me/keys', { name: `k${n}`, permissions: ['users:list'], expires_at: daysFrom(clock, 5) })
    : await me('POST', `/me/keys/${keyId}/rotate`, { grace_seconds: 0 })
}

t.test('creations and rotations share one count per user; beyond it 429 with Retry-After until the oldest leaves the hour', async (t) => {
  const s = await startWithMember(t, { env: { IDENTITY_SELF_SERVICE_KEY_CHANGES_PER_HOUR: String(PER_HOUR) } })
  const bob = await addMember(t, s, 'bob@example.com', ['reader'])
  const first = await createOwnKey(t, s.ada.me, { name: 'first', permissions: ['users:list'], expires_at: daysFrom(s.clock, 5) })
  for (let n = 2; n <= PER_HOUR; n++) {
    s.clock.advance(60_000)
    assertStatus(t, await change(s.ada.me, n, first.id, s.clock), n % 2 === 1 ? 201 : 200, `change ${n} of ${PER_HOUR}`)
  }
  // The first change was made 3 minutes ago: room again in 57 minutes.
  for (const [n, what] of [[5, 'a creation'], [6, 'a rotation']] as const) {
    const refused = await change(s.ada.me, n, first.id, s.clock)
    assertProblem(t, refused, 429, 'key_changes_throttled', what)
    t.equal(refused.headers['retry-after'], String(57 * 60), `${what}: Retry-After names when the oldest change leaves the window`)
    t.equal(refused.body.detail, `Too many key creations or rotations; retry after ${57 * 60} seconds.`)
  }
  assertStatus(t, await bob.me('POST', '/me/keys', { name: 'bob', permissions: ['users:list'], expires_at: daysFrom(s.clock, 5) }), 201,
    'another user has a count of their own')
  assertStatus(t, await s.ada.me('POST', `/me/keys/${first.id}/revoke`), 200, 'revoking is not a change that counts')

  s.clock.advance(HOUR_MS - 3 * 60_000 - 1_000)
  await s.ada.relogin()
  const almost = await change(s.ada.me, 7, first.id, s.clock)
  assertProblem(t, almost, 429, 'key_changes_throttled', 'a second before the oldest leaves')
  t.equal(almost.headers['retry-after'], '1')
  s.clock.advance(1_000)
  const second = await createOwnKey(t, s.ada.me, { name: 'after an hour', permissions: ['users:list'], expires_at: daysFrom(s.clock, 5) })
  assertProblem(t, await change(s.ada.me, 8, second.id, s.clock), 429, 'key_changes_throttled', 'one left the window: room for one')
})

async function twoIdentitiesOnOneRedis (t: Test) {
  const redis = await startRedis(t)
  const clock = fakeClock()
  const databasePath = join(tempDir(t), 'identity.db')
  const env = { REDIS_URL: redis.url, IDENTITY_SELF_SERVICE_KEY_CHANGES_PER_HOUR: String(PER_HOUR) }
  const one = await startIdentity(t, env, { clock, databasePath })
  const two = await startIdentity(t, env, { clock, databasePath })
  return { one, two, clock }
}

t.test('with Redis, every identity process counts a user\'s changes together', async (t) => {
  const { one, two, clock } = await twoIdentitiesOnOneRedis(t)
  const admin = adminClient(one.adminUrl, one.adminToken)
  assertStatus(t, await admin('PUT', '/admin/roles/reader', { permissions: ['users:list'] }), 200)
  const ada = await addMember(t, { ...one, admin, clock }, 'ada@example.com', ['reader'])
  const viaTwo = meCall(two.publicUrl, (await openSession(t, two, { email: 'ada@example.com', password: PASSWORD })).access_token)
  const first = await createOwnKey(t, ada.me, { name: 'first', permissions: ['users:list'], expires_at: daysFrom(clock, 5) })
  for (let n = 2; n <= PER_HOUR; n++) {
    const me = n % 2 === 0 ? viaTwo : ada.me
    assertStatus(t, await change(me, n, first.id, clock), n % 2 === 1 ? 201 : 200, `change ${n}, alternating processes`)
  }
  for (const [which, me] of [['one', ada.me], ['two', viaTwo]] as const) {
    const refused = await change(me, 5, first.id, clock)
    assertProblem(t, refused, 429, 'key_changes_throttled', `process ${which} sees the shared count`)
    t.equal(refused.headers['retry-after'], '3600')
  }
  clock.advance(HOUR_MS)
  await ada.relogin()
  assertStatus(t, await change(ada.me, 5, first.id, clock), 201, 'an hour later, room again')
})

t.test('with Redis lost, the changes are counted in process: the limit holds, said once', async (t) => {
  const redis = await startRedis(t)
  const s = await startWithMember(t, { env: { REDIS_URL: redis.url, IDENTITY_SELF_SERVICE_KEY_CHANGES_PER_HOUR: String(PER_HOUR) } })
  const first = await createOwnKey(t, s.ada.me, { name: 'first', permissions: ['users:list'], expires_at: daysFrom(s.clock, 5) })
  await redis.stop()
  for (let n = 2; n <= PER_HOUR + 1; n++) {
    assertStatus(t, await change(s.ada.me, n, first.id, s.clock), n % 2 === 1 ? 201 : 200, `change ${n}: counted in process`)
  }
  assertProblem(t, await change(s.ada.me, PER_HOUR + 2, first.id, s.clock), 429, 'key_changes_throttled', 'the limit holds without Redis')
  const warnings = s.logs.filter((line) => typeof line.msg === 'string' && line.msg.includes('self-service key change counts'))
  t.equal(warnings.length, 1, 'one warning for the outage')
  t.equal(warnings[0]?.level, 40, 'at warn level')
})
