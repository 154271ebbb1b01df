import t, { type Test } from 'tap'
import { START, iso } from '../helpers/identity.js'
import type { HttpAnswer } from '../helpers/http.js'
import { assertJson, assertStatus } from '../helpers/assert.js'
import {
  openSession, postLogout, postVerifyKey, refreshTokens, startWithAdmin, type AdminSetup, type SessionTokens, type TokenSet
} from '../helpers/session-setup.js'
import { startRedis, type TestRedis } from '../helpers/redis.js'
import { watchEvents, type EventWatcher } from '../helpers/events.js'

/**
 * Invalidation events, observed the way a gateway observes them: a separate ioredis
 * subscriber on identity's channel. Every change that affects authentication
 * publishes one event naming what changed; a change that changes nothing publishes
 * nothing; and when Redis is down the change still succeeds and the loss is logged.
 */

const PASSWORD = 'correct horse battery'

interface Setup extends AdminSetup {
  events: EventWatcher
  now: () => string
  createUser: (email: string, roles?: string[]) => Promise<string>
  login: (email: string, password?: string) => Promise<SessionTokens>
  refresh: (tokenSet: TokenSet) => Promise<HttpAnswer>
}

async function setup (t: Test, redis: TestRedis): Promise<Setup> {
  // startIdentity gives every identity its own channel: tests never hear each other.
  const s = await startWithAdmin(t, { REDIS_URL: redis.url })
  const events = await watchEvents(t, { redisUrl: redis.url, eventsChannel: s.config.eventsChannel })
  return {
    ...s,
    events,
    now: () => iso(s.clock.now()),
    async createUser (email, roles = []) {
      const answer = await s.admin('POST', '/admin/users', { email, password: PASSWORD, roles })
      assertStatus(t, answer, 201, `create ${email}`)
      return answer.body.user.id as string
    },
    login: async (email, password = PASSWORD) => await openSession(t, s, { email, password }, {}, `login ${email}`),
    refresh: async (tokenSet) => await refreshTokens(s, tokenSet)
  }
}

/**
 * Proves that nothing was published since the last taken event: `sentinel` publishes
 * a known event, and Redis delivers one publisher's messages in order, so anything
 * published before it has arrived by the time it does.
 */
async function assertNothingElse (t: Test, events: EventWatcher, sentinel: () => Promise<void>, label: string): Promise<void> {
  await sentinel()
  await events.next('role.changed', { where: (e) => e.role === 'sentinel' })
  t.same(events.pending(), [], `${label}: no other event was published`)
}

t.test('events', async (t) => {
  const redis = await startRedis(t)

  t.test('key.updated, key.disabled, key.enabled, key.rotated, key.revoked name the key', async (t) => {
    const s = await setup(t, redis)
    const sentinel = async (): Promise<void> => { assertStatus(t, await s.admin('PUT', '/admin/roles/sentinel', { permissions: [] }), 200) }
    const created = await s.admin('POST', '/admin/keys', { name: 'k', permissions: ['users:list'], expires_at: iso(START + 86_400_000) })
    assertStatus(t, created, 201)
    const keyId = created.body.api_key.id as string
    await assertNothingElse(t, s.events, sentinel, 'creating a key (nothing to invalidate)')

    s.clock.advance(1_000)
    assertStatus(t, await s.admin('PATCH', `/admin/keys/${keyId}`, { permissions: ['users:read'] }), 200)
    t.same(await s.events.next('key.updated'), { type: 'key.updated', keyId, at: s.now() }, 'permissions changed')
    assertStatus(t, await s.admin('PATCH', `/admin/keys/${keyId}`, { expires_at: iso(START + 3_600_000) }), 200)
    t.same(await s.events.next('key.updated'), { type: 'key.updated', keyId, at: s.now() }, 'expiry changed')

    s.clock.advance(1_000)
    assertStatus(t, await s.admin('POST', `/admin/keys/${keyId}/disable`), 200)
    t.same(await s.events.next('key.disabled'), { type: 'key.disabled', keyId, at: s.now() })
    assertStatus(t, await s.admin('POST', `/admin/keys/${keyId}/disable`), 200)
    await assertNothingElse(t, s.events, sentinel, 'disabling a disabled key')
    assertStatus(t, await s.admin('POST', `/admin/keys/${keyId}/enable`), 200)
    t.same(await s.events.next('key.enabled'), { type: 'key.enabled', keyId, at: s.now() })

    s.clock.advance(1_000)
    const rotated = await s.admin('POST', `/admin/keys/${keyId}/rotate`, { grace_seconds: 60 })
    assertStatus(t, rotated, 200)
    t.same(await s.events.next('key.rotated'), { type: 'key.rotated', keyId, at: s.now() })

    s.clock.advance(1_000)
    assertStatus(t, await s.admin('POST', `/admin/keys/${keyId}/revoke`), 200)
    t.same(await s.events.next('key.revoked'), { type: 'key.revoked', keyId, at: s.now() })
    assertStatus(t, await s.admin('POST', `/admin/keys/${keyId}/revoke`), 200)
    await assertNothingElse(t, s.events, sentinel, 'revoking a revoked key')

    for (const message of s.events.raw) {
      t.notOk(message.includes(created.body.key) || message.includes(rotated.body.key), 'no key text on the channel')
    }
  })

  t.test('session.revoked: admin revocation, one or all of a user\'s', async (t) => {
    const s = await setup(t, redis)
    const sentinel = async (): Promise<void> => { assertStatus(t, await s.admin('PUT', '/admin/roles/sentinel', { permissions: [] }), 200) }
    const userId = await s.createUser('ada@example.com')
    const one = await s.login('ada@example.com')
    const two = await s.login('ada@example.com')
    const three = await s.login('ada@example.com')

    s.clock.advance(1_000)
    assertStatus(t, await s.admin('DELETE', `/admin/sessions/${one.sid}`), 200)
    t.same(await s.events.next('session.revoked'), { type: 'session.revoked', sessionIds: [one.sid], userId, reason: 'admin', at: s.now() })
    assertStatus(t, await s.admin('DELETE', `/admin/sessions/${one.sid}`), 200)
    await assertNothingElse(t, s.events, sentinel, 'revoking a revoked session')

    s.clock.advance(1_000)
    assertStatus(t, await s.admin('DELETE', `/admin/users/${userId}/sessions`), 200)
    const all = await s.events.next('session.revoked')
    t.same({ ...all, sessionIds: [...all.sessionIds].sort() },
      { type: 'session.revoked', sessionIds: [two.sid, three.sid].sort(), userId, reason: 'admin', at: s.now() }, 'the live ones, in one event')
    assertStatus(t, await s.admin('DELETE', `/admin/users/${userId}/sessions`), 200)
    await assertNothingElse(t, s.events, sentinel, 'a user without live sessions')
  })

  t.test('session.revoked: logout on the public listener', async (t) => {
    const s = await setup(t, redis)
    const userId = await s.createUser('ada@example.com')
    const session = await s.login('ada@example.com')
    s.clock.advance(1_000)
    const logout = await postLogout(s, session.access_token)
    assertStatus(t, logout, 204)
    t.same(await s.events.next('session.revoked'), { type: 'session.revoked', sessionIds: [session.sid], userId, reason: 'logout', at: s.now() })
  })

  t.test('session.revoked: refresh-token reuse revokes the session', async (t) => {
    const s = await setup(t, redis)
    const userId = await s.createUser('ada@example.com')
    const session = await s.login('ada@example.com')
    s.clock.advance(1_000)
    assertStatus(t, await s.refresh(session), 200, 'first use')
    s.clock.advance(1_000)
    const reuse = await s.refresh(session)
    assertStatus(t, reuse, 401, 'second use of the same refresh token')
    t.equal(reuse.body.code, 'refresh_token_reused')
    t.same(await s.events.next('session.revoked'),
      { type: 'session.revoked', sessionIds: [session.sid], userId, reason: 'refresh_token_reuse', at: s.now() })
  })

  t.test('user.disabled (with session.revoked), user.enabled, and password changes', async (t) => {
    const s = await setup(t, redis)
    const sentinel = async (): Promise<void> => { assertStatus(t, await s.admin('PUT', '/admin/roles/sentinel', { permissions: [] }), 200) }
    const userId = await s.createUser('ada@example.com')
    await assertNothingElse(t, s.events, sentinel, 'creating a user')
    const one = await s.login('ada@example.com')
    const two = await s.login('ada@example.com')

    s.clock.advance(1_000)
    assertStatus(t, await s.admin('POST', `/admin/users/${userId}/disable`), 200)
    t.same(await s.events.next('user.disabled'), { type: 'user.disabled', userId, at: s.now() })
    const ended = await s.events.next('session.revoked')
    t.same({ ...ended, sessionIds: [...ended.sessionIds].sort() },
      { type: 'session.revoked', sessionIds: [one.sid, two.sid].sort(), userId, reason: 'user_disabled', at: s.now() })
    assertStatus(t, await s.admin('POST', `/admin/users/${userId}/disable`), 200)
    await assertNothingElse(t, s.events, sentinel, 'disabling a disabled user')

    s.clock.advance(1_000)
    assertStatus(t, await s.admin('POST', `/admin/users/${userId}/enable`), 200)
    t.same(await s.events.next('user.enabled'), { type: 'user.enabled', userId, at: s.now() })

    const three = await s.login('ada@example.com')
    s.clock.advance(1_000)
    assertStatus(t, await s.admin('PUT', `/admin/users/${userId}/password`, { password: 'another passphrase' }), 200)
    t.same(await s.events.next('session.revoked'),
      { type: 'session.revoked', sessionIds: [three.sid], userId, reason: 'password_changed', at: s.now() })
  })

  t.test('user.roles_changed, role.changed, signing_key.rotated', async (t) => {
    const s = await setup(t, redis)
    const sentinel = async (): Promise<void> => { assertStatus(t, await s.admin('PUT', '/admin/roles/sentinel', { permissions: [] }), 200) }
    assertStatus(t, await s.admin('PUT', '/admin/roles/reader', { permissions: ['users:list'] }), 200)
    t.same(await s.events.next('role.changed'), { type: 'role.changed', role: 'reader', userIds: [], at: s.now() }, 'created')
    s.clock.advance(1_000)
    assertStatus(t, await s.admin('PUT', '/admin/roles/reader', { permissions: ['users:list', 'users:read'] }), 200)
    t.same(await s.events.next('role.changed'), { type: 'role.changed', role: 'reader', userIds: [], at: s.now() }, 'replaced')

    const userId = await s.createUser('ada@example.com', ['reader'])
    s.clock.advance(1_000)
    assertStatus(t, await s.admin('PUT', `/admin/users/${userId}/roles`, { roles: [] }), 200)
    t.same(await s.events.next('user.roles_changed'), { type: 'user.roles_changed', userId, at: s.now() })
    assertStatus(t, await s.admin('PUT', `/admin/users/${userId}/roles`, { roles: ['ghost'] }), 400)
    await assertNothingElse(t, s.events, sentinel, 'a refused role change')

    assertStatus(t, await s.admin('PUT', `/admin/users/${userId}/roles`, { roles: ['reader'] }), 200)
    await s.events.next('user.roles_changed')
    assertStatus(t, await s.admin('PUT', '/admin/roles/reader', { permissions: ['users:list'] }), 200)
    t.same(await s.events.next('role.changed'), { type: 'role.changed', role: 'reader', userIds: [userId], at: s.now() },
      'a role change names the users who hold the role, so gateways can expire their tokens')
    assertStatus(t, await s.admin('DELETE', '/admin/roles/reader'), 409)
    await assertNothingElse(t, s.events, sentinel, 'a refused role deletion')
    assertStatus(t, await s.admin('PUT', `/admin/users/${userId}/roles`, { roles: [] }), 200)
    await s.events.next('user.roles_changed')
    s.clock.advance(1_000)
    assertStatus(t, await s.admin('DELETE', '/admin/roles/reader'), 204)
    t.same(await s.events.next('role.changed'), { type: 'role.changed', role: 'reader', userIds: [], at: s.now() }, 'deleted')

    s.clock.advance(1_000)
    const rotated = await s.admin('POST', '/admin/signing-keys/rotate')
    assertStatus(t, rotated, 200)
    t.same(await s.events.next('signing_key.rotated'), { type: 'signing_key.rotated', kid: rotated.body.signing_key.kid, at: s.now() })
  })

  t.test('key.updated for every live key of the users a change of role policies reaches', async (t) => {
    const s = await setup(t, redis)
    const sentinel = async (): Promise<void> => { assertStatus(t, await s.admin('PUT', '/admin/roles/sentinel', { permissions: [] }), 200) }
    const burst = { name: 'burst', kind: 'rate', limit: 10, window_seconds: 1, partition: 'user' }
    assertStatus(t, await s.admin('PUT', '/admin/roles/reader', { permissions: ['users:list'] }), 200)
    await s.events.next('role.changed')
    const userId = await s.createUser('ada@example.com', ['reader'])
    const key = async (name: string, owner: string | null): Promise<string> => {
      const created = await s.admin('POST', '/admin/keys', { name, permissions: [], expires_at: iso(START + 86_400_000), owner_user_id: owner })
      assertStatus(t, created, 201, `key ${name}`)
      return created.body.api_key.id as string
    }
    const owned = await key('owned', userId)
    await key('own', null)
    const revoked = await key('revoked', userId)
    assertStatus(t, await s.admin('POST', `/admin/keys/${revoked}/revoke`), 200)
    await s.events.next('key.revoked')
    await assertNothingElse(t, s.events, sentinel, 'creating keys, owned or not (nothing to invalidate)')

    s.clock.advance(1_000)
    assertStatus(t, await s.admin('PUT', '/admin/roles/reader', { permissions: ['users:list'], policies: [burst] }), 200)
    t.same(await s.events.next('role.changed'), { type: 'role.changed', role: 'reader', userIds: [userId], at: s.now() })
    t.same(await s.events.next('key.updated'), { type: 'key.updated', keyId: owned, at: s.now() },
      'the key of the role\'s holder: its verdict carries the role\'s policies')
    await assertNothingElse(t, s.events, sentinel, 'no event for a key of its own or a revoked one')

    s.clock.advance(1_000)
    assertStatus(t, await s.admin('PUT', '/admin/roles/reader', { permissions: ['users:read'] }), 200)
    await s.events.next('role.changed', { where: (e) => e.role === 'reader' })
    t.same(await s.events.next('key.updated'), { type: 'key.updated', keyId: owned, at: s.now() },
      'a change of permissions only (policies kept): the key may do at most what its owner may')
    assertStatus(t, await s.admin('PUT', '/admin/roles/reader', { permissions: ['users:read'], policies: [burst] }), 200)
    await s.events.next('role.changed', { where: (e) => e.role === 'reader' })
    await assertNothingElse(t, s.events, sentinel, 'the same permissions and policies again')

    s.clock.advance(1_000)
    assertStatus(t, await s.admin('POST', `/admin/users/${userId}/disable`), 200)
    await s.events.next('user.disabled')
    t.same(await s.events.next('key.updated'), { type: 'key.updated', keyId: owned, at: s.now() }, 'the owner disabled: the key works only while its owner is active')
    s.clock.advance(1_000)
    assertStatus(t, await s.admin('POST', `/admin/users/${userId}/enable`), 200)
    await s.events.next('user.enabled')
    t.same(await s.events.next('key.updated'), { type: 'key.updated', keyId: owned, at: s.now() }, 'the owner enabled again')
    await assertNothingElse(t, s.events, sentinel, 'one event each, for the live owned key only')

    s.clock.advance(1_000)
    assertStatus(t, await s.admin('PUT', `/admin/users/${userId}/roles`, { roles: [] }), 200)
    t.same(await s.events.next('user.roles_changed'), { type: 'user.roles_changed', userId, at: s.now() })
    t.same(await s.events.next('key.updated'), { type: 'key.updated', keyId: owned, at: s.now() }, 'the owner\'s roles changed')

    assertStatus(t, await s.admin('PATCH', `/admin/keys/${owned}`, { policies: [burst] }), 200)
    t.same(await s.events.next('key.updated'), { type: 'key.updated', keyId: owned, at: s.now() }, 'the key\'s own policies changed')
  })

  t.test('each identity publishes on its own configured channel only', async (t) => {
    const a = await setup(t, redis)
    const b = await setup(t, redis)
    t.not(a.config.eventsChannel, b.config.eventsChannel)
    assertStatus(t, await a.admin('PUT', '/admin/roles/only-a', { permissions: [] }), 200)
    t.same(await a.events.next('role.changed'), { type: 'role.changed', role: 'only-a', userIds: [], at: a.now() })
    assertStatus(t, await b.admin('PUT', '/admin/roles/sentinel', { permissions: [] }), 200)
    await b.events.next('role.changed', { where: (e) => e.role === 'sentinel' })
    t.same(b.events.received.map((e) => e.type === 'role.changed' ? e.role : e.type), ['sentinel'], 'b heard nothing of a')
  })
})

const sharedRedis = process.env.REDIS_URL !== undefined && process.env.REDIS_URL !== ''
t.test('Redis down: admin changes still succeed and the lost events are logged', {
  skip: sharedRedis ? 'REDIS_URL points at a shared Redis that this test cannot stop' : false
}, async (t) => {
  const redis = await startRedis(t)
  const s = await setup(t, redis)
  const userId = await s.createUser('ada@example.com')
  const session = await s.login('ada@example.com')
  const key = await s.admin('POST', '/admin/keys', { name: 'k', permissions: ['users:list'], expires_at: iso(START + 86_400_000) })
  assertStatus(t, key, 201)
  const keyId = key.body.api_key.id as string
  assertStatus(t, await s.admin('PUT', '/admin/roles/reader', { permissions: ['users:list'] }), 200)
  await s.events.next('role.changed')

  await redis.stop()
  const changes: Array<[string, string, unknown?]> = [
    ['PATCH', `/admin/keys/${keyId}`, { permissions: ['users:read'] }],
    ['POST', `/admin/keys/${keyId}/rotate`],
    ['POST', `/admin/keys/${keyId}/revoke`],
    ['DELETE', `/admin/sessions/${session.sid}`],
    ['PUT', '/admin/roles/reader', { permissions: ['users:read'] }],
    ['PUT', `/admin/users/${userId}/roles`, { roles: ['reader'] }],
    ['POST', `/admin/users/${userId}/disable`],
    ['POST', '/admin/signing-keys/rotate']
  ]
  for (const [method, path, body] of changes) {
    const answer = await s.admin(method, path, body)
    assertJson(t, answer, 200, `${method} ${path} with Redis down`)
  }
  // The changes were made, whatever happened to their events.
  const verify = await postVerifyKey(s, key.body.key)
  t.same(verify.body, { valid: false, reason: 'revoked' })
  t.match((await s.admin('GET', `/admin/sessions/${session.sid}`)).body.session, { status: 'revoked', revoked_reason: 'admin' })
  t.match((await s.admin('GET', `/admin/users/${userId}`)).body.user, { status: 'disabled', roles: ['reader'] })

  const lost = s.logs.filter((line) => line.level === 40 && line.msg === 'invalidation event not published; gateways rely on their cache TTL')
  t.same(lost.map((line) => line.eventType),
    ['key.updated', 'key.rotated', 'key.revoked', 'session.revoked', 'role.changed', 'user.roles_changed', 'user.disabled', 'signing_key.rotated'],
    'one warning per lost event, naming its type')
  t.notOk(s.logText().includes(key.body.key), 'the logs never carry the key')

  // When Redis is back, events flow again without restarting identity. Both ioredis
  // clients reconnect with a back-off, so this polls (bounded) instead of sleeping.
  await redis.restart()
  let heard = false
  for (let attempt = 0; attempt < 20 && !heard; attempt++) {
    const role = `probe-${attempt}`
    assertStatus(t, await s.admin('PUT', `/admin/roles/${role}`, { permissions: [] }), 200)
    heard = await s.events.next('role.changed', { where: (e) => e.role === role, timeoutMs: 500 }).then(() => true, () => false)
  }
  t.ok(heard, 'events are delivered again after Redis returns')
})
