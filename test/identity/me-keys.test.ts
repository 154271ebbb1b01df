import t from 'tap'
import { API_KEY_PATTERN, parseApiKey } from '../../common/api-key-format.js'
import { assertJson, assertProblem, assertStatus } from '../helpers/assert.js'
import { iso } from '../helpers/identity.js'
import { keyHelpers } from '../helpers/session-setup.js'
import { addMember, auditRows, createOwnKey, DAY_MS, daysFrom, startWithMember } from '../helpers/self-service.js'

/**
 * /me/keys on identity's public listener: a user's own API keys, made, listed, shown,
 * rotated and revoked with their access token. Verification goes through the gateway's
 * endpoint, /internal/keys/verify.
 */

const ROLES = { member: ['users:list', 'tasks:*'] }

t.test('happy: create shows the full key once; the key is the owner\'s, self-service, and works', async (t) => {
  const s = await startWithMember(t, { roles: ROLES })
  const { verify } = keyHelpers(t, s)
  const expiresAt = daysFrom(s.clock, 30)
  const answer = await s.ada.me('POST', '/me/keys', { name: 'laptop', permissions: ['users:list', 'tasks:read'], expires_at: expiresAt })
  assertJson(t, answer, 201)
  t.equal(answer.headers['cache-control'], 'no-store', 'the answer with the key is not cached')
  const key = answer.body.key as string
  t.match(key, API_KEY_PATTERN)
  t.match(answer.body, {
    api_key: {
      name: 'laptop',
      origin: 'self_service',
      owner_user_id: s.userId,
      permissions: ['tasks:read', 'users:list'],
      status: 'active',
      expires_at: expiresAt,
      key_prefix: key.slice(0, 16),
      key_last4: key.slice(-4)
    },
    warnings: []
  })
  t.match(await verify(key), { valid: true, key: { id: answer.body.api_key.id, permissions: ['tasks:read', 'users:list'] } }, 'the key works')

  const operatorView = await s.admin('GET', `/admin/keys/${answer.body.api_key.id as string}`)
  t.equal(operatorView.body.api_key.name, `${s.userId}/laptop`, 'operators see the name in the owner\'s namespace')
  t.equal(operatorView.body.api_key.origin, 'self_service')

  const [created] = auditRows(s, 'key.create')
  t.match(created, { outcome: 'success', actor_type: 'user', actor_id: s.userId, target_type: 'api_key', target_id: answer.body.api_key.id },
    'the creation is in the audit trail, the user as its actor')
  t.notOk((created?.changes ?? '').includes(parseApiKey(key)?.secret ?? key), 'the record holds no secret')
})

t.test('happy: list and show cover every key the user owns, however made, and never a secret', async (t) => {
  const s = await startWithMember(t, { roles: ROLES })
  const bob = await addMember(t, s, 'bob@example.com', ['member'])
  const own = await createOwnKey(t, s.ada.me, { name: 'ci', permissions: ['tasks:read'], expires_at: daysFrom(s.clock, 10) })
  s.clock.advance(1_000)
  const given = await s.admin('POST', '/admin/keys', { name: 'given by ops', permissions: ['users:list'], owner_user_id: s.userId })
  assertStatus(t, given, 201)
  await s.admin('POST', '/admin/keys', { name: 'nobody\'s', permissions: ['users:list'] })
  await createOwnKey(t, bob.me, { name: 'ci', permissions: ['tasks:read'], expires_at: daysFrom(s.clock, 10) })

  const listed = await s.ada.me('GET', '/me/keys')
  assertJson(t, listed, 200)
  t.equal(listed.headers['cache-control'], 'no-store')
  t.same(listed.body.api_keys.map((k: Record<string, unknown>) => [k.name, k.origin, k.owner_user_id]),
    [['ci', 'self_service', s.userId], ['given by ops', 'admin', s.userId]], 'own keys only, oldest first, whatever their origin')
  for (const key of [own.key, given.body.key as string]) {
    t.notOk(listed.text.includes(parseApiKey(key)?.secret ?? key), 'no secret in the listing')
  }
  const shown = await s.ada.me('GET', `/me/keys/${own.id}`)
  assertJson(t, shown, 200)
  t.same(shown.body, { api_key: listed.body.api_keys[0] }, 'shown as listed')
  t.same(shown.body.api_key.last_used_at, null)
})

t.test('happy: uses reported by gateways show as the last use (time, route, address)', async (t) => {
  const s = await startWithMember(t, { roles: ROLES })
  const { reportUses } = keyHelpers(t, s)
  const own = await createOwnKey(t, s.ada.me, { name: 'ci', permissions: ['tasks:read'], expires_at: daysFrom(s.clock, 10) })
  s.clock.advance(60_000)
  await reportUses([{ key: own.key, at: s.clock.now(), route: '/tasks/:id', ip: '203.0.113.7' }])
  const shown = await s.ada.me('GET', `/me/keys/${own.id}`)
  t.match(shown.body.api_key, { last_used_at: iso(s.clock.now()), last_used_route: '/tasks/:id', last_used_ip: '203.0.113.7' })
})

t.test('happy: usage over time, as operators see it', async (t) => {
  const s = await startWithMember(t, { roles: ROLES })
  const { reportUses } = keyHelpers(t, s)
  const own = await createOwnKey(t, s.ada.me, { name: 'ci', permissions: ['tasks:read'], expires_at: daysFrom(s.clock, 10) })
  s.clock.advance(2 * 3_600_000)
  await reportUses([{ key: own.key, count: 7, at: s.clock.now() - 3_600_000 }])
  await s.ada.relogin()
  for (const query of ['', '?step=hour', '?step=day', `?from=${iso(s.clock.now() - 3 * 3_600_000)}&to=${iso(s.clock.now())}`]) {
    const mine = await s.ada.me('GET', `/me/keys/${own.id}/usage${query}`)
    assertJson(t, mine, 200, `usage${query}`)
    t.equal(mine.headers['cache-control'], 'no-store')
    t.match(mine.body, { key_id: own.id, totals: { allowed: 7, total: 7 } }, `usage${query}: the reported uses`)
    const operators = await s.admin('GET', `/admin/keys/${own.id}/usage${query}`)
    t.same(mine.body, operators.body, `usage${query}: the operators' answer`)
  }
  for (const query of ['?step=week', '?from=yesterday', `?from=${iso(s.clock.now())}&to=${iso(s.clock.now() - 3_600_000)}`, '?extra=1']) {
    assertProblem(t, await s.ada.me('GET', `/me/keys/${own.id}/usage${query}`), 400, 'validation_failed', `usage${query}`)
  }
})

t.test('happy: rotation with a grace period, the old secret then stops; a grace past the key\'s expiry is cut to it', async (t) => {
  const s = await startWithMember(t, { roles: ROLES })
  const { verify } = keyHelpers(t, s)
  const own = await createOwnKey(t, s.ada.me, { name: 'ci', permissions: ['tasks:read'], expires_at: daysFrom(s.clock, 3) })

  const now = await s.ada.me('POST', `/me/keys/${own.id}/rotate`, { grace_seconds: 0 })
  assertJson(t, now, 200)
  t.equal(now.headers['cache-control'], 'no-store')
  t.same(now.body.warnings, [])
  t.match(await verify(own.key), { valid: false, reason: 'secret_retired' }, 'grace 0: the old secret stops at once')
  t.match(await verify(now.body.key as string), { valid: true }, 'the new secret works')

  const hour = await s.ada.me('POST', `/me/keys/${own.id}/rotate`, { grace_seconds: 3600 })
  assertJson(t, hour, 200)
  t.match(await verify(now.body.key as string), { valid: true }, 'within the grace, the old secret works')
  t.equal(hour.body.api_key.rotation.grace_until, iso(s.clock.now() + 3_600_000))
  s.clock.advance(3_600_000)
  t.match(await verify(now.body.key as string), { valid: false, reason: 'secret_retired' }, 'after it, not')
  await s.ada.relogin()

  // The key expires in 3 days less an hour: 7 days of grace is cut to that.
  const untilExpiry = 3 * 86_400 - 3_600
  const long = await s.ada.me('POST', `/me/keys/${own.id}/rotate`, { grace_seconds: 604_800 })
  assertJson(t, long, 200)
  t.equal(long.body.api_key.rotation.grace_until, daysFrom(s.clock, 3, -3_600_000), 'the grace ends when the key does')
  t.match(long.body.warnings, [new RegExp(`grace_seconds 604800 would outlast the key.*${untilExpiry} seconds`)], 'and a warning says so')

  const bare = await s.ada.me('POST', `/me/keys/${own.id}/rotate`)
  assertJson(t, bare, 200, 'a bare POST rotates with the default grace (24 h here)')
  t.equal(bare.body.api_key.rotation.grace_until, iso(s.clock.now() + DAY_MS))

  for (const grace of [-1, 604_801, 1.5, '60']) {
    assertProblem(t, await s.ada.me('POST', `/me/keys/${own.id}/rotate`, { grace_seconds: grace }), 400, 'validation_failed', `grace_seconds ${String(grace)}`)
  }
  t.equal(auditRows(s, 'key.rotate').length, 4, 'each rotation is in the audit trail')
})

t.test('happy: revocation is final; the key stops working', async (t) => {
  const s = await startWithMember(t, { roles: ROLES })
  const { verify } = keyHelpers(t, s)
  const own = await createOwnKey(t, s.ada.me, { name: 'ci', permissions: ['tasks:read'], expires_at: daysFrom(s.clock, 3) })
  const revoked = await s.ada.me('POST', `/me/keys/${own.id}/revoke`)
  assertJson(t, revoked, 200)
  t.match(revoked.body.api_key, { status: 'revoked', revoked_at: iso(s.clock.now()) })
  t.match(await verify(own.key), { valid: false, reason: 'revoked' })
  assertProblem(t, await s.ada.me('POST', `/me/keys/${own.id}/rotate`, { grace_seconds: 0 }), 409, 'key_revoked', 'a revoked key cannot be rotated')
  assertJson(t, await s.ada.me('POST', `/me/keys/${own.id}/revoke`), 200, 'revoking again changes nothing')
})

t.test('bound: a key grants at most what its owner holds, with the wildcard rules; a refusal is audited', async (t) => {
  const s = await startWithMember(t, { roles: { member: ['users:list', 'tasks:*'], meetings: ['meetings:read'] } })
  const root = await addMember(t, s, 'root@example.com', [])
  assertStatus(t, await s.admin('PUT', '/admin/roles/everything', { permissions: ['*'] }), 200)
  assertStatus(t, await s.admin('PUT', `/admin/users/${root.userId}/roles`, { roles: ['everything'] }), 200)
  const cases: Array<{ asked: string[], beyond: string | null, who?: typeof root }> = [
    { asked: ['tasks:read'], beyond: null },
    { asked: ['tasks:*'], beyond: null },
    { asked: ['tasks:read', 'tasks:update', 'users:list', 'meetings:read'], beyond: null },
    { asked: [], beyond: null },
    { asked: ['users:read'], beyond: 'users:read' },
    { asked: ['users:*'], beyond: 'users:*' },
    { asked: ['meetings:*'], beyond: 'meetings:*' },
    { asked: ['*'], beyond: '*' },
    { asked: ['zeta:read', 'tasks:read', 'alpha:read', 'users:read'], beyond: 'alpha:read' },
    { asked: ['anything:at-all', '*'], beyond: null, who: root }
  ]
  let refusals = 0
  for (const [i, { asked, beyond, who }] of cases.entries()) {
    const me = who?.me ?? s.ada.me
    const name = `key-${i}`
    const answer = await me('POST', '/me/keys', { name, permissions: asked, expires_at: daysFrom(s.clock, 5) })
    const label = `${who === undefined ? 'ada' : 'root'} asks ${JSON.stringify(asked)}`
    if (beyond === null) {
      assertStatus(t, answer, 201, label)
      continue
    }
    refusals++
    assertProblem(t, answer, 403, 'permission_not_held', label)
    t.equal(answer.body.detail, `You do not hold ${beyond}, so you cannot give it: not to a key, a role or a user.`, `${label}: names ${beyond}`)
    const record = auditRows(s, 'key.create').filter((row) => row.outcome === 'failure').at(-1)
    t.match(record, {
      error_code: 'permission_not_held', actor_type: 'user', actor_id: s.userId, target_type: 'api_key', target_id: null, target_name: `${s.userId}/${name}`
    }, `${label}: audited as a refused creation`)
    t.same(JSON.parse(record?.changes ?? 'null'), { after: { permissions: [...new Set(asked)].sort() } }, `${label}: with what was asked`)
  }
  t.equal(auditRows(s, 'key.create').filter((row) => row.outcome === 'failure').length, refusals, 'one record per refusal')
})

t.test('bound: an operator permission never goes on a key, whoever holds it', async (t) => {
  const s = await startWithMember(t, { roles: { member: ['tasks:*'], operator: ['admin:*', 'tasks:*'] } })
  const operator = await addMember(t, s, 'op@example.com', ['operator'])
  for (const me of [s.ada.me, operator.me]) {
    for (const asked of [['admin:keys'], ['admin:*'], ['tasks:read', 'admin:users']]) {
      const answer = await me('POST', '/me/keys', { name: 'escalate', permissions: asked, expires_at: daysFrom(s.clock, 5) })
      assertProblem(t, answer, 400, 'validation_failed', JSON.stringify(asked))
      t.match(answer.body.detail, /admin:\S+ is an operator permission; API keys never administer identity/)
    }
  }
  const failures = auditRows(s, 'key.create').filter((row) => row.error_code === 'validation_failed')
  t.equal(failures.length, 6, 'asking for one is recorded: it is an attempt to escalate')
  t.same((await operator.me('GET', '/me/keys')).body.api_keys, [], 'and no key was made')
})

t.test('bound: a self-service key must expire, within the longest lifetime', async (t) => {
  const s = await startWithMember(t, { roles: ROLES })
  const make = async (body: Record<string, unknown>) => await s.ada.me('POST', '/me/keys', { name: 'k', permissions: ['tasks:read'], ...body })
  assertProblem(t, await make({}), 400, 'validation_failed', 'expires_at absent')
  assertProblem(t, await make({ expires_at: null }), 400, 'validation_failed', 'expires_at null')
  assertProblem(t, await make({ expires_at: 'next week' }), 400, 'validation_failed', 'expires_at not a time')
  for (const offset of [0, -1, -DAY_MS]) {
    assertProblem(t, await make({ expires_at: daysFrom(s.clock, 0, offset) }), 400, 'expiry_in_past', `expires_at now ${offset} ms`)
  }
  for (const extra of [1_000, DAY_MS, 3650 * DAY_MS]) {
    const beyond = await make({ expires_at: daysFrom(s.clock, 90, extra) })
    assertProblem(t, beyond, 400, 'key_lifetime_too_long', `90 days and ${extra} ms`)
    t.equal(beyond.body.detail, 'expires_at is beyond the maximum key lifetime of 90 days.')
  }
  assertStatus(t, await make({ expires_at: daysFrom(s.clock, 90) }), 201, 'exactly 90 days is allowed')
  assertStatus(t, await make({ name: 'short', expires_at: daysFrom(s.clock, 0, 1_000) }), 201, 'a second is allowed')
})

t.test('bound: the longest lifetime is the configured one, or the largest a role of the user sets', async (t) => {
  const s = await startWithMember(t, { env: { IDENTITY_SELF_SERVICE_KEY_MAX_LIFETIME_DAYS: '10' }, roles: { member: ['tasks:*'] } })
  const lifetime = async (me: typeof s.ada.me) => (await me('GET', '/me')).body.self_service.key_max_lifetime_days as number
  const tryDays = async (me: typeof s.ada.me, days: number, extraMs = 0) =>
    await me('POST', '/me/keys', { name: `k-${days}-${extraMs}`, permissions: ['tasks:read'], expires_at: daysFrom(s.clock, days, extraMs) })

  t.equal(await lifetime(s.ada.me), 10, 'the configured default')
  assertStatus(t, await tryDays(s.ada.me, 10), 201)
  t.match((await tryDays(s.ada.me, 10, 1_000)).body, { code: 'key_lifetime_too_long', detail: /of 10 days/ })

  // Roles: short (3 days, below the default), long (200), unset (null).
  for (const [role, days] of [['short', 3], ['long', 200], ['unset', null]] as const) {
    assertStatus(t, await s.admin('PUT', `/admin/roles/${role}`, { permissions: ['tasks:*'], key_max_lifetime_days: days }), 200, `role ${role}`)
  }
  const cases: Array<[string[], number]> = [[['short'], 3], [['long'], 200], [['short', 'long'], 200], [['unset'], 10], [['short', 'unset'], 3], [['member'], 10]]
  for (const [roles, expected] of cases) {
    const member = await addMember(t, s, `${roles.join('-')}@example.com`, roles)
    t.equal(await lifetime(member.me), expected, `${roles.join(' + ')}: ${expected} days`)
    assertStatus(t, await tryDays(member.me, expected), 201, `${roles.join(' + ')}: ${expected} days is allowed`)
    const beyond = await tryDays(member.me, expected, 1_000)
    assertProblem(t, beyond, 400, 'key_lifetime_too_long', `${roles.join(' + ')}: beyond`)
    t.match(beyond.body.detail, `of ${expected} days`)
  }

  // A role's setting takes effect at once, and PATCH sets it alone.
  const shortOnly = await addMember(t, s, 'later@example.com', ['short'])
  const patched = await s.admin('PATCH', '/admin/roles/short', { key_max_lifetime_days: 45 })
  assertJson(t, patched, 200)
  t.match(patched.body.role, { permissions: ['tasks:*'], key_max_lifetime_days: 45 }, 'PATCH keeps the permissions')
  t.equal(await lifetime(shortOnly.me), 45)
  const put = await s.admin('PUT', '/admin/roles/short', { permissions: ['tasks:read'] })
  t.equal(put.body.role.key_max_lifetime_days, 45, 'PUT without it keeps it')
  const cleared = await s.admin('PATCH', '/admin/roles/short', { key_max_lifetime_days: null })
  t.equal(cleared.body.role.key_max_lifetime_days, null)
  t.equal(await lifetime(shortOnly.me), 10, 'null: back to the default')
  for (const bad of [0, 3651, 1.5, '30']) {
    assertProblem(t, await s.admin('PATCH', '/admin/roles/short', { key_max_lifetime_days: bad }), 400, 'validation_failed', `key_max_lifetime_days ${String(bad)}`)
  }
  assertProblem(t, await s.admin('PATCH', '/admin/roles/short', {}), 400, 'validation_failed', 'PATCH with nothing')
  assertProblem(t, await s.admin('PATCH', '/admin/roles/ghost', { key_max_lifetime_days: 5 }), 404, 'role_not_found')
})

t.test('bound: at most IDENTITY_SELF_SERVICE_MAX_KEYS active keys; revoked and expired ones do not count', async (t) => {
  const s = await startWithMember(t, { env: { IDENTITY_SELF_SERVICE_MAX_KEYS: '3' }, roles: ROLES })
  const make = async (name: string, days = 5) => await s.ada.me('POST', '/me/keys', { name, permissions: ['tasks:read'], expires_at: daysFrom(s.clock, days) })
  const keysLeft = async () => (await s.ada.me('GET', '/me')).body.self_service.keys_left as number
  t.equal(await keysLeft(), 3)
  const short = (await make('short', 1)).body.api_key.id as string
  const given = await s.admin('POST', '/admin/keys', { name: 'given', permissions: ['tasks:read'], owner_user_id: s.userId })
  assertStatus(t, given, 201, 'an operator gives the user a key: it counts too')
  const kept = (await make('kept')).body.api_key.id as string
  t.equal(await keysLeft(), 0)

  const refused = await make('one too many')
  assertProblem(t, refused, 409, 'key_limit_reached')
  t.equal(refused.body.detail, 'You hold 3 active keys, the most allowed; revoke one first.')
  t.match(auditRows(s, 'key.create').at(-1), { outcome: 'failure', error_code: 'key_limit_reached', actor_id: s.userId, target_name: `${s.userId}/one too many` },
    'audited as a refused creation')

  assertJson(t, await s.ada.me('POST', `/me/keys/${kept}/revoke`), 200)
  t.equal(await keysLeft(), 1, 'a revoked key frees its place')
  assertStatus(t, await make('after revoke'), 201)
  assertProblem(t, await make('full again'), 409, 'key_limit_reached')
  s.clock.advance(DAY_MS)
  await s.ada.relogin()
  t.equal(await keysLeft(), 1, `an expired key frees its place (${short})`)
  assertStatus(t, await make('after expiry'), 201)

  assertStatus(t, await s.admin('POST', `/admin/keys/${given.body.api_key.id as string}/disable`), 200)
  assertProblem(t, await make('disabled is held'), 409, 'key_limit_reached', 'a disabled key still counts: it can be enabled again')
})

t.test('bound: concurrent creations cannot pass the key limit together', async (t) => {
  const s = await startWithMember(t, { env: { IDENTITY_SELF_SERVICE_MAX_KEYS: '4' }, roles: ROLES })
  for (const name of ['a', 'b', 'c']) await createOwnKey(t, s.ada.me, { name, permissions: ['tasks:read'], expires_at: daysFrom(s.clock, 5) })
  const answers = await Promise.all(Array.from({ length: 6 }, async (_, i) =>
    await s.ada.me('POST', '/me/keys', { name: `race-${i}`, permissions: ['tasks:read'], expires_at: daysFrom(s.clock, 5) })))
  t.same(answers.map((a) => a.status).sort(), [201, 409, 409, 409, 409, 409], 'one gets the last place, the others 409')
  t.equal((await s.ada.me('GET', '/me/keys')).body.api_keys.length, 4)
})

t.test('bound: another user\'s key is an unknown key on every /me/keys/{id} route, and stays untouched', async (t) => {
  const s = await startWithMember(t, { roles: ROLES })
  const { verify } = keyHelpers(t, s)
  const bob = await addMember(t, s, 'bob@example.com', ['member'])
  const bobs = await createOwnKey(t, bob.me, { name: 'ci', permissions: ['tasks:read'], expires_at: daysFrom(s.clock, 5) })
  const nobodys = await s.admin('POST', '/admin/keys', { name: 'service', permissions: ['tasks:read'] })
  const ids = { 'bob\'s key': bobs.id, 'a key of nobody': nobodys.body.api_key.id as string, 'an unknown id': 'key_0000000000000000' }
  const routes: Array<[string, (id: string) => string, unknown]> = [
    ['GET', (id) => `/me/keys/${id}`, undefined],
    ['POST', (id) => `/me/keys/${id}/rotate`, { grace_seconds: 0 }],
    ['POST', (id) => `/me/keys/${id}/revoke`, undefined],
    ['GET', (id) => `/me/keys/${id}/usage`, undefined],
    ['GET', (id) => `/me/keys/${id}/usage?step=day`, undefined]
  ]
  for (const [method, path, body] of routes) {
    const bodies: unknown[] = []
    for (const [what, id] of Object.entries(ids)) {
      const answer = await s.ada.me(method, path(id), body)
      assertProblem(t, answer, 404, 'key_not_found', `${method} ${path('{id}')}: ${what}`)
      t.equal(answer.body.detail, `No API key has id ${id}.`)
      bodies.push({ ...answer.body, detail: answer.body.detail.replace(id, '{id}') })
    }
    t.same(new Set(bodies.map((b) => JSON.stringify(b))).size, 1, `${method} ${path('{id}')}: the same answer whoever owns the id`)
  }
  t.match(await verify(bobs.key), { valid: true }, 'bob\'s key still works')
  t.match(await verify(nobodys.body.key as string), { valid: true }, 'so does the unowned one')
  t.same(auditRows(s, 'key.rotate'), [], 'nothing was rotated')
  t.same(auditRows(s, 'key.revoke'), [], 'nothing was revoked')
})

t.test('names: in the owner\'s namespace; a clash is with one\'s own keys only; nobody else takes a user\'s namespace', async (t) => {
  const s = await startWithMember(t, { roles: ROLES })
  const bob = await addMember(t, s, 'bob@example.com', ['member'])
  const body = (name: string) => ({ name, permissions: ['tasks:read'], expires_at: daysFrom(s.clock, 5) })
  for (const name of ['ci', 'deploy/prod', 'usr_lookalike/x', 'ünïcødé ✓']) {
    const ada = await createOwnKey(t, s.ada.me, body(name))
    t.equal(ada.answer.body.api_key.name, name, `${name}: shown as given`)
    await createOwnKey(t, bob.me, body(name))
    const again = await s.ada.me('POST', '/me/keys', body(name))
    assertProblem(t, again, 409, 'key_name_taken', `${name}: taken among ada's own keys`)
    t.equal(again.body.detail, `An API key named ${name} already exists.`, `${name}: named as the owner knows it`)
  }
  // The global namespace is the operators': a name there never clashes with a user's.
  const global = await s.admin('POST', '/admin/keys', { name: 'ci', permissions: ['tasks:read'] })
  assertStatus(t, global, 201, 'operators may name a key ci too')

  for (const name of [`${s.userId}/squat`, `${bob.userId}/ci`, 'usr_/x', 'usr_0000000000000000/x', 'usr_a_b/c']) {
    const refused = await s.admin('POST', '/admin/keys', { name, permissions: ['tasks:read'] })
    assertProblem(t, refused, 400, 'validation_failed', `the admin API refuses ${name}`)
    t.match(refused.body.detail, /is in that user's own namespace/)
  }
  for (const name of ['usr/x', 'user_x/y', 'x/usr_y/z', 'USR_x/y', 'usr_x']) {
    assertStatus(t, await s.admin('POST', '/admin/keys', { name, permissions: ['tasks:read'] }), 201, `${name} is no user's namespace`)
  }
})

t.test('names: no C0 or C1 control, line separator or bidirectional override, through /me or the admin API; nothing is made', async (t) => {
  const s = await startWithMember(t, { roles: ROLES })
  const body = (name: string) => ({ name, permissions: ['tasks:read'], expires_at: daysFrom(s.clock, 5) })
  for (const char of ['\u0000', '\u001b', '\u007f', '\u0085', '\u009b', '\u2028', '\u2029', '\u202e', '\u2066', '\u2069']) {
    const name = `ci${char}prod`
    const label = `U+${char.codePointAt(0)?.toString(16).padStart(4, '0') ?? ''}`
    const own = await s.ada.me('POST', '/me/keys', body(name))
    assertProblem(t, own, 400, 'validation_failed', `/me refuses ${label}`)
    t.match(own.body.detail, /body\/name must match pattern/, `${label}: the name is named`)
    assertProblem(t, await s.admin('POST', '/admin/keys', body(name)), 400, 'validation_failed', `the admin API refuses ${label}`)
  }
  t.same((await s.admin('GET', '/admin/keys')).body.api_keys, [], 'no key was made')
  t.equal(auditRows(s, 'key.create').length, 0, 'nor recorded')
  assertStatus(t, await s.ada.me('POST', '/me/keys', body('ünïcødé ✓ — שלום')), 201, 'printable unicode stays allowed')
})
