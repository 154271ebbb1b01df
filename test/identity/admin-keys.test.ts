import t, { type Test } from 'tap'
import { API_KEY_PATTERN, parseApiKey } from '../../common/api-key-format.js'
import { START, iso } from '../helpers/identity.js'
import type { HttpAnswer } from '../helpers/http.js'
import { assertJson, assertProblem } from '../helpers/assert.js'
import { keyHelpers, postVerifyKey, startWithAdmin, type AdminSetup, type KeyHelpers } from '../helpers/session-setup.js'

/**
 * /admin/keys: the API key lifecycle. The full key is shown once (create, rotate);
 * names are unique even under concurrency; expiry is advised and capped; keys are
 * updated, disabled, revoked (final) and rotated with a grace period whose use ops
 * can watch. Verification goes through the gateway's endpoint, /internal/keys/verify;
 * uses are what gateways report through /internal/keys/usage.
 */

const HOUR_MS = 3_600_000
const DAY_MS = 86_400_000

async function setup (t: Test, env: Record<string, string> = {}): Promise<AdminSetup & KeyHelpers> {
  const s = await startWithAdmin(t, env)
  return { ...s, ...keyHelpers(t, s) }
}

/** The key's secret part: what must never appear outside the create/rotate answer. */
const secretOf = (key: string): string => (parseApiKey(key) as { secret: string }).secret

function assertNoSecrets (t: Test, answer: HttpAnswer, keys: string[], label: string): void {
  t.notOk(answer.text.includes('sha256$') || answer.text.includes('$argon2'), `${label}: no hash`)
  for (const key of keys) {
    t.notOk(answer.text.includes(key), `${label}: not the full key`)
    t.notOk(answer.text.includes(secretOf(key)), `${label}: not the secret`)
  }
}

t.test('happy: create shows the full key once, in the documented format', async (t) => {
  const s = await setup(t)
  const expiresAt = iso(START + 90 * DAY_MS)
  const answer = await s.admin('POST', '/admin/keys', { name: 'billing sync', permissions: ['users:read', 'tasks:*', 'users:list'], expires_at: expiresAt })
  assertJson(t, answer, 201)
  t.equal(answer.headers['cache-control'], 'no-store', 'the answer with the key is not cached')
  const key = answer.body.key as string
  t.match(key, /^ptk_[0-9A-Za-z]{12}_[0-9A-Za-z]{49}$/)
  t.match(key, API_KEY_PATTERN)
  t.not(parseApiKey(key), null, 'the checksum is valid')
  t.same(answer.body, {
    api_key: {
      id: answer.body.api_key.id,
      name: 'billing sync',
      origin: 'admin',
      key_prefix: key.slice(0, 16),
      key_last4: key.slice(-4),
      permissions: ['tasks:*', 'users:list', 'users:read'],
      policies: [],
      owner_user_id: null,
      status: 'active',
      expires_at: expiresAt,
      created_at: iso(START),
      updated_at: iso(START),
      last_used_at: null,
      last_used_route: null,
      last_used_ip: null,
      disabled_at: null,
      revoked_at: null,
      rotation: null,
      secrets: [{
        key_prefix: key.slice(0, 16),
        key_last4: key.slice(-4),
        state: 'current',
        created_at: iso(START),
        retired_at: null,
        grace_until: null,
        last_used_at: null,
        last_used_route: null,
        last_used_ip: null,
        use_count: 0
      }]
    },
    key,
    warnings: []
  })
  t.match(answer.body.api_key.id, /^key_[0-9A-Za-z]{16}$/)
  t.notOk(answer.text.includes('sha256$') || answer.text.includes('$argon2'), 'no hash in the create answer either')
  t.same(await s.verify(key), {
    valid: true,
    key: {
      id: answer.body.api_key.id, name: 'billing sync', permissions: ['tasks:*', 'users:list', 'users:read'], expires_at: expiresAt, owner_user_id: null, policies: []
    },
    deprecation: null
  }, 'the key works')

  // Only a hash is stored: the test below ("list and show never…") is not vacuous.
  const stored = s.identity.db.prepare('SELECT secret_hash FROM api_key_secrets').pluck().all() as string[]
  t.equal(stored.length, 1)
  t.match(stored[0], /^sha256\$[A-Za-z0-9_-]{43}$/)
  t.notOk(stored[0]?.includes(secretOf(key)))
})

t.test('security: list and show never include the full key, its secret or any hash', async (t) => {
  const s = await setup(t)
  const first = await s.create({ name: 'one', permissions: ['users:list'], expires_at: iso(START + DAY_MS) })
  s.clock.advance(1_000)
  const second = await s.create({ name: 'two', permissions: ['*'] })
  const rotated = await s.admin('POST', `/admin/keys/${first.id}/rotate`)
  assertJson(t, rotated, 200)
  const keys = [first.key, second.key, rotated.body.key as string]

  const listed = await s.admin('GET', '/admin/keys')
  assertJson(t, listed, 200)
  t.same(listed.body.api_keys.map((k: { name: string }) => k.name), ['one', 'two'], 'oldest first')
  assertNoSecrets(t, listed, keys, 'list')
  for (const { id } of [first, second]) {
    const shown = await s.admin('GET', `/admin/keys/${id}`)
    assertJson(t, shown, 200)
    t.same(shown.body, { api_key: listed.body.api_keys.find((k: { id: string }) => k.id === id) }, 'show = the list entry')
    assertNoSecrets(t, shown, keys, `show ${id}`)
  }
  const verified = await postVerifyKey(s, first.key)
  assertNoSecrets(t, verified, keys, 'verify')
})

t.test('happy: a key is told apart by its prefix and last 4 characters, which follow a rotation', async (t) => {
  const s = await setup(t)
  const created = await s.create({ name: 'told apart', permissions: ['users:list'], expires_at: iso(START + DAY_MS) })
  t.equal(created.answer.body.api_key.key_last4, created.key.slice(-4), 'create: the last 4 characters of the key text')
  const listed = await s.admin('GET', '/admin/keys')
  assertJson(t, listed, 200)
  t.match(listed.body.api_keys, [{ id: created.id, key_last4: created.key.slice(-4) }], 'the list shows them')

  s.clock.advance(HOUR_MS) // secrets are listed newest first
  const rotated = await s.admin('POST', `/admin/keys/${created.id}/rotate`)
  assertJson(t, rotated, 200)
  const newKey = rotated.body.key as string
  t.not(newKey.slice(-4), created.key.slice(-4), 'a new secret ends otherwise (or the checks below prove nothing)')
  t.match(rotated.body.api_key, {
    key_last4: newKey.slice(-4),
    rotation: { old_key_last4: created.key.slice(-4) },
    secrets: [{ key_last4: newKey.slice(-4), state: 'current' }, { key_last4: created.key.slice(-4), state: 'grace' }]
  }, 'rotation: the new secret\'s, and the old one\'s while it still works')

  const stored = s.identity.db.prepare('SELECT last4 FROM api_key_secrets').pluck().all() as string[]
  t.same(stored.map((last4) => last4.length), [4, 4], 'never more than 4 characters are kept')

  // A secret made before the column existed has none: the view says so rather than guess.
  s.identity.db.prepare('UPDATE api_key_secrets SET last4 = NULL').run()
  const older = await s.admin('GET', `/admin/keys/${created.id}`)
  assertJson(t, older, 200)
  t.match(older.body.api_key, { key_prefix: newKey.slice(0, 16), key_last4: null, rotation: { old_key_last4: null }, secrets: [{ key_last4: null }, { key_last4: null }] })
})

t.test('error: names are unique', async (t) => {
  const s = await setup(t)
  await s.create({ name: 'billing', permissions: ['users:read'] })
  const duplicate = await s.admin('POST', '/admin/keys', { name: 'billing', permissions: ['*'] })
  assertProblem(t, duplicate, 409, 'key_name_taken')
  t.match(duplicate.body.detail, /billing/)
  t.notOk('key' in duplicate.body, 'no key issued')
  t.equal((await s.admin('GET', '/admin/keys')).body.api_keys.length, 1)
  t.equal(s.identity.db.prepare('SELECT count(*) FROM api_key_secrets').pluck().get(), 1, 'no orphan secret')
})

t.test('concurrency: 20 simultaneous creations of one name give exactly one 201 and nineteen 409', async (t) => {
  const s = await setup(t)
  const answers = await Promise.all(Array.from({ length: 20 }, async (_, i) =>
    await s.admin('POST', '/admin/keys', { name: 'race', permissions: [`tasks:r${i}`], expires_at: iso(START + DAY_MS) })))
  const created = answers.filter((a) => a.status === 201)
  const conflicts = answers.filter((a) => a.status === 409)
  t.equal(created.length, 1, 'one winner')
  t.equal(conflicts.length, 19, 'nineteen conflicts')
  for (const conflict of conflicts) assertProblem(t, conflict, 409, 'key_name_taken', 'a loser')
  const listed = (await s.admin('GET', '/admin/keys')).body.api_keys
  t.equal(listed.length, 1, 'one key stored')
  t.equal(listed[0].id, created[0]?.body.api_key.id)
  t.equal(s.identity.db.prepare('SELECT count(*) FROM api_key_secrets').pluck().get(), 1, 'one secret stored')
  t.match(await s.verify(created[0]?.body.key), { valid: true }, 'the winner\'s key works')
})

t.test('error: bad create bodies are 400 and write nothing', async (t) => {
  const s = await setup(t)
  const bodies: Array<[string, unknown]> = [
    ['no name', { permissions: [] }],
    ['empty name', { name: '', permissions: [] }],
    ['101-character name', { name: 'n'.repeat(101), permissions: [] }],
    ['control character in the name', { name: 'bad\nname', permissions: [] }],
    ['no permissions', { name: 'k' }],
    ['invalid permission', { name: 'k', permissions: ['users'] }],
    ['expires_at not a date-time', { name: 'k', permissions: [], expires_at: 'tomorrow' }],
    ['unknown member', { name: 'k', permissions: [], secret: 'mine' }]
  ]
  for (const [label, body] of bodies) assertProblem(t, await s.admin('POST', '/admin/keys', body), 400, 'validation_failed', label)
  t.same((await s.admin('GET', '/admin/keys')).body, { api_keys: [] })
  assertJson(t, await s.admin('POST', '/admin/keys', { name: 'n'.repeat(100), permissions: [] }), 201, '100-character name')
})

t.test('expiry: a key without one gets a warning; a past expiry is refused', async (t) => {
  const s = await setup(t)
  const forever = await s.create({ name: 'forever', permissions: ['users:list'] })
  t.equal(forever.answer.body.api_key.expires_at, null, 'no maximum lifetime configured: no expiry')
  t.match(forever.answer.body.warnings, [/expir/], 'a warning advises an expiry')
  t.equal(forever.answer.body.warnings.length, 1)
  const explicitNull = await s.create({ name: 'null', permissions: [], expires_at: null })
  t.match(explicitNull.answer.body.warnings, [/expir/], 'null is the same as absent')
  const dated = await s.create({ name: 'dated', permissions: [], expires_at: '2999-01-01T00:00:00Z' })
  t.same(dated.answer.body.warnings, [], 'no warning with an expiry')

  assertProblem(t, await s.admin('POST', '/admin/keys', { name: 'past', permissions: [], expires_at: iso(START - 1) }), 400, 'expiry_in_past', '1 ms ago')
  assertProblem(t, await s.admin('POST', '/admin/keys', { name: 'now', permissions: [], expires_at: iso(START) }), 400, 'expiry_in_past', 'now')
  assertJson(t, await s.admin('POST', '/admin/keys', { name: 'soon', permissions: [], expires_at: iso(START + 1) }), 201, 'in 1 ms')
  assertProblem(t, await s.admin('PATCH', `/admin/keys/${dated.id}`, { expires_at: iso(START - DAY_MS) }), 400, 'expiry_in_past', 'PATCH')
  t.equal((await s.admin('GET', `/admin/keys/${dated.id}`)).body.api_key.expires_at, '2999-01-01T00:00:00.000Z', 'unchanged')
  t.same((await s.admin('GET', '/admin/keys')).body.api_keys.map((k: { name: string }) => k.name).sort(), ['dated', 'forever', 'null', 'soon'],
    'nothing written for the refused ones')
})

t.test('expiry: IDENTITY_API_KEY_MAX_LIFETIME_DAYS caps it and fills it in', async (t) => {
  const s = await setup(t, { IDENTITY_API_KEY_MAX_LIFETIME_DAYS: '30' })
  const latest = START + 30 * DAY_MS

  const absent = await s.create({ name: 'absent', permissions: [] })
  t.equal(absent.answer.body.api_key.expires_at, iso(latest), 'absent: set to the maximum')
  t.match(absent.answer.body.warnings, [/30 days/])
  const explicitNull = await s.create({ name: 'null', permissions: [], expires_at: null })
  t.equal(explicitNull.answer.body.api_key.expires_at, iso(latest), 'null: set to the maximum')
  const atMax = await s.create({ name: 'at max', permissions: [], expires_at: iso(latest) })
  t.equal(atMax.answer.body.api_key.expires_at, iso(latest), 'exactly the maximum is allowed')
  t.same(atMax.answer.body.warnings, [])

  const tooFar = await s.admin('POST', '/admin/keys', { name: 'too far', permissions: [], expires_at: iso(latest + 1) })
  assertProblem(t, tooFar, 400, 'key_lifetime_too_long', '1 ms beyond')
  t.match(tooFar.body.detail, /30 days/)
  assertProblem(t, await s.admin('POST', '/admin/keys', { name: 'way too far', permissions: [], expires_at: '2999-01-01T00:00:00Z' }),
    400, 'key_lifetime_too_long', 'year 2999')
  t.equal((await s.admin('GET', '/admin/keys')).body.api_keys.length, 3, 'nothing written for the refused ones')

  // The cap applies to updates too, measured from now.
  s.clock.advance(10 * DAY_MS)
  assertProblem(t, await s.admin('PATCH', `/admin/keys/${atMax.id}`, { expires_at: iso(START + 40 * DAY_MS + 1) }), 400, 'key_lifetime_too_long', 'PATCH too far')
  const extended = await s.admin('PATCH', `/admin/keys/${atMax.id}`, { expires_at: iso(START + 40 * DAY_MS) })
  assertJson(t, extended, 200, 'PATCH to the new maximum')
  t.equal(extended.body.api_key.expires_at, iso(START + 40 * DAY_MS))
  const cleared = await s.admin('PATCH', `/admin/keys/${absent.id}`, { expires_at: null })
  assertJson(t, cleared, 200, 'PATCH to no expiry')
  t.equal(cleared.body.api_key.expires_at, iso(START + 40 * DAY_MS), 'gets the maximum instead of never')
  t.match(cleared.body.warnings, [/30 days/])
})

t.test('happy: PATCH changes permissions and expiry', async (t) => {
  const s = await setup(t)
  const { id, key } = await s.create({ name: 'k', permissions: ['users:list'], expires_at: iso(START + DAY_MS) })
  s.clock.advance(1_000)
  const permissions = await s.admin('PATCH', `/admin/keys/${id}`, { permissions: ['tasks:create', 'meetings:*'] })
  assertJson(t, permissions, 200)
  t.match(permissions.body, { api_key: { permissions: ['meetings:*', 'tasks:create'], expires_at: iso(START + DAY_MS), updated_at: iso(START + 1_000) }, warnings: [] })
  t.notOk('key' in permissions.body, 'no key in an update answer')
  t.match(await s.verify(key), { valid: true, key: { permissions: ['meetings:*', 'tasks:create'] } }, 'verify sees the new permissions')

  const expiry = await s.admin('PATCH', `/admin/keys/${id}`, { expires_at: iso(START + 2 * HOUR_MS) })
  assertJson(t, expiry, 200)
  t.match(expiry.body.api_key, { permissions: ['meetings:*', 'tasks:create'], expires_at: iso(START + 2 * HOUR_MS) }, 'permissions kept')
  t.match(await s.verify(key), { valid: true, key: { expires_at: iso(START + 2 * HOUR_MS) } })

  const both = await s.admin('PATCH', `/admin/keys/${id}`, { permissions: [], expires_at: '2999-01-01T00:00:00Z' })
  t.match(both.body.api_key, { permissions: [], expires_at: '2999-01-01T00:00:00.000Z' })

  assertProblem(t, await s.admin('PATCH', `/admin/keys/${id}`, {}), 400, 'validation_failed', 'an empty change')
  assertProblem(t, await s.admin('PATCH', `/admin/keys/${id}`, { name: 'renamed' }), 400, 'validation_failed', 'the name is not changeable')
  assertProblem(t, await s.admin('PATCH', `/admin/keys/${id}`, { permissions: ['*:*'] }), 400, 'validation_failed', 'bad permission')
})

t.test('error: unknown key ids are 404 key_not_found', async (t) => {
  const s = await setup(t)
  const routes: Array<[string, string, unknown?]> = [
    ['GET', '/admin/keys/key_nothere'],
    ['PATCH', '/admin/keys/key_nothere', { permissions: [] }],
    ['POST', '/admin/keys/key_nothere/disable'],
    ['POST', '/admin/keys/key_nothere/enable'],
    ['POST', '/admin/keys/key_nothere/revoke'],
    ['POST', '/admin/keys/key_nothere/rotate']
  ]
  for (const [method, path, body] of routes) {
    const answer = await s.admin(method, path, body)
    assertProblem(t, answer, 404, 'key_not_found', `${method} ${path}`)
    t.match(answer.body.detail, /key_nothere/)
  }
})

t.test('happy: disable and enable without deleting', async (t) => {
  const s = await setup(t)
  const { id, key } = await s.create({ name: 'k', permissions: ['users:list'], expires_at: iso(START + DAY_MS) })
  s.clock.advance(1_000)
  const disabled = await s.admin('POST', `/admin/keys/${id}/disable`)
  assertJson(t, disabled, 200)
  t.match(disabled.body.api_key, { id, status: 'disabled', disabled_at: iso(START + 1_000), revoked_at: null })
  t.same(await s.verify(key), { valid: false, reason: 'disabled' })
  t.same((await s.admin('GET', '/admin/keys')).body.api_keys.map((k: { id: string, status: string }) => [k.id, k.status]), [[id, 'disabled']], 'still listed')

  s.clock.advance(1_000)
  t.equal((await s.admin('POST', `/admin/keys/${id}/disable`)).body.api_key.disabled_at, iso(START + 1_000), 'disabling twice keeps the first time')
  assertJson(t, await s.admin('PATCH', `/admin/keys/${id}`, { permissions: ['users:read'] }), 200, 'a disabled key can be updated')

  const enabled = await s.admin('POST', `/admin/keys/${id}/enable`)
  assertJson(t, enabled, 200)
  t.match(enabled.body.api_key, { status: 'active', disabled_at: null })
  t.match(await s.verify(key), { valid: true, key: { id, permissions: ['users:read'] } }, 'the same key works again')
})

t.test('happy: revocation is final', async (t) => {
  const s = await setup(t)
  const { id, key } = await s.create({ name: 'k', permissions: ['users:list'], expires_at: iso(START + DAY_MS) })
  s.clock.advance(1_000)
  const revoked = await s.admin('POST', `/admin/keys/${id}/revoke`)
  assertJson(t, revoked, 200)
  t.match(revoked.body.api_key, { id, status: 'revoked', revoked_at: iso(START + 1_000) })
  t.same(await s.verify(key), { valid: false, reason: 'revoked' })

  for (const [method, path, body] of [
    ['PATCH', `/admin/keys/${id}`, { permissions: ['*'] }],
    ['PATCH', `/admin/keys/${id}`, { expires_at: '2999-01-01T00:00:00Z' }],
    ['POST', `/admin/keys/${id}/enable`],
    ['POST', `/admin/keys/${id}/disable`],
    ['POST', `/admin/keys/${id}/rotate`]
  ] as Array<[string, string, unknown?]>) {
    const answer = await s.admin(method, path, body)
    assertProblem(t, answer, 409, 'key_revoked', `${method} ${path} after revocation`)
    t.match(answer.body.detail, new RegExp(id))
  }
  s.clock.advance(1_000)
  const again = await s.admin('POST', `/admin/keys/${id}/revoke`)
  assertJson(t, again, 200, 'revoking twice')
  t.match(again.body.api_key, { status: 'revoked', revoked_at: iso(START + 1_000), permissions: ['users:list'] }, 'nothing changed')
  t.same(await s.verify(key), { valid: false, reason: 'revoked' })
  t.equal((await s.admin('GET', '/admin/keys')).body.api_keys.length, 1, 'kept for the record')
})

t.test('happy: the last use, its route and address come from the gateways\' reports, not from verifications', async (t) => {
  const s = await setup(t)
  const { id, key } = await s.create({ name: 'k', permissions: [], expires_at: iso(START + DAY_MS) })
  t.equal((await s.admin('GET', `/admin/keys/${id}`)).body.api_key.last_used_at, null)
  s.clock.advance(5_000)
  await s.verify(key)
  t.match((await s.admin('GET', `/admin/keys/${id}`)).body.api_key, { last_used_at: null, secrets: [{ use_count: 0 }] },
    'a verification is not a use: the gateway reports the request it verified for')
  await s.reportUses([{ key, count: 3, at: START + 5_000, route: '/users/:id', ip: '203.0.113.7' }])
  const shown = (await s.admin('GET', `/admin/keys/${id}`)).body.api_key
  t.match(shown, { last_used_at: iso(START + 5_000), last_used_route: '/users/:id', last_used_ip: '203.0.113.7' })
  t.match(shown.secrets, [{ last_used_at: iso(START + 5_000), last_used_route: '/users/:id', last_used_ip: '203.0.113.7', use_count: 3 }])
  s.clock.advance(5_000)
  t.same(await s.verify(`${key.slice(0, 20)}${key.slice(21)}x`), { valid: false, reason: 'malformed' })
  t.equal((await s.admin('GET', `/admin/keys/${id}`)).body.api_key.last_used_at, iso(START + 5_000), 'a failed verification is not a use')
})

t.test('rotation: the old secret works during the default 24 h grace, with its use counted, then retires', async (t) => {
  const s = await setup(t)
  const expiresAt = iso(START + 90 * DAY_MS)
  const { id, key: oldKey } = await s.create({ name: 'k', permissions: ['users:list'], expires_at: expiresAt })
  s.clock.advance(HOUR_MS)
  const rotatedAt = START + HOUR_MS
  const rotated = await s.admin('POST', `/admin/keys/${id}/rotate`)
  assertJson(t, rotated, 200)
  t.equal(rotated.headers['cache-control'], 'no-store')
  const newKey = rotated.body.key as string
  t.match(newKey, /^ptk_[0-9A-Za-z]{12}_[0-9A-Za-z]{49}$/)
  t.not(newKey.slice(0, 16), oldKey.slice(0, 16), 'a new lookup id')
  t.match(rotated.body, {
    api_key: {
      id,
      name: 'k',
      key_prefix: newKey.slice(0, 16),
      permissions: ['users:list'],
      expires_at: expiresAt,
      rotation: { old_key_prefix: oldKey.slice(0, 16), grace_until: iso(rotatedAt + DAY_MS), old_secret_use_count: 0, old_secret_last_used_at: null },
      secrets: [
        { key_prefix: newKey.slice(0, 16), state: 'current', retired_at: null, grace_until: null },
        { key_prefix: oldKey.slice(0, 16), state: 'grace', retired_at: iso(rotatedAt), grace_until: iso(rotatedAt + DAY_MS) }
      ]
    },
    warnings: []
  })

  const current = { valid: true, key: { id, name: 'k', permissions: ['users:list'], expires_at: expiresAt, owner_user_id: null, policies: [] } }
  t.same(await s.verify(newKey), { ...current, deprecation: null }, 'the new key verifies, not deprecated')
  const deprecation = { deprecated_at: iso(rotatedAt), sunset_at: iso(rotatedAt + DAY_MS) }
  s.clock.advance(HOUR_MS)
  t.same(await s.verify(oldKey), { ...current, deprecation }, 'the old key verifies, with its deprecation')

  const useCount = async (): Promise<Record<string, unknown>> => (await s.admin('GET', '/admin/keys')).body.api_keys[0].rotation
  t.match(await useCount(), { old_secret_use_count: 0, old_secret_last_used_at: null }, 'verifying is not using')
  await s.reportUses([{ key: oldKey, at: s.clock.now() }])
  t.match(await useCount(), { old_secret_use_count: 1, old_secret_last_used_at: iso(rotatedAt + HOUR_MS) })
  s.clock.advance(HOUR_MS)
  await s.verify(oldKey)
  await s.reportUses([{ key: oldKey, at: s.clock.now() }])
  t.match(await useCount(), { old_secret_use_count: 2, old_secret_last_used_at: iso(rotatedAt + 2 * HOUR_MS) }, 'each use counts')
  await s.verify(newKey)
  await s.reportUses([{ key: newKey, at: s.clock.now() }])
  t.match(await useCount(), { old_secret_use_count: 2 }, 'new-key uses are not old-secret uses')
  t.same(await s.verify(`${oldKey.slice(0, 17)}${'A'.repeat(43)}${oldKey.slice(-6)}`), { valid: false, reason: 'malformed' })
  t.match(await useCount(), { old_secret_use_count: 2 }, 'failures are not uses')

  // The last millisecond of the grace period, then the end of it.
  s.clock.advance(rotatedAt + DAY_MS - 1 - s.clock.now())
  t.same(await s.verify(oldKey), { ...current, deprecation }, 'still valid 1 ms before the sunset')
  await s.reportUses([{ key: oldKey, at: s.clock.now() }])
  s.clock.advance(1)
  t.same(await s.verify(oldKey), { valid: false, reason: 'secret_retired' }, 'retired at the sunset')
  t.same(await s.verify(newKey), { ...current, deprecation: null }, 'the new key is unaffected')
  const after = (await s.admin('GET', `/admin/keys/${id}`)).body.api_key
  t.equal(after.rotation, null, 'no rotation in progress any more')
  t.match(after.secrets, [{ state: 'current' }, { state: 'retired', use_count: 3 }])
})

t.test('rotation: grace_seconds chooses the grace period (0 retires at once)', async (t) => {
  const s = await setup(t)
  const { id, key: firstKey } = await s.create({ name: 'k', permissions: [], expires_at: iso(START + DAY_MS) })
  const rotated = await s.admin('POST', `/admin/keys/${id}/rotate`, { grace_seconds: 60 })
  assertJson(t, rotated, 200)
  t.match(rotated.body.api_key.rotation, { grace_until: iso(START + 60_000) })
  s.clock.advance(59_999)
  t.match(await s.verify(firstKey), { valid: true, deprecation: { sunset_at: iso(START + 60_000) } })
  s.clock.advance(1)
  t.same(await s.verify(firstKey), { valid: false, reason: 'secret_retired' })

  const secondKey = rotated.body.key as string
  const immediate = await s.admin('POST', `/admin/keys/${id}/rotate`, { grace_seconds: 0 })
  assertJson(t, immediate, 200)
  t.equal(immediate.body.api_key.rotation, null, 'nothing in grace')
  t.same(await s.verify(secondKey), { valid: false, reason: 'secret_retired' }, 'grace 0: the old secret stops at once')
  t.match(await s.verify(immediate.body.key), { valid: true, deprecation: null })

  for (const grace of [-1, 7_776_001, 1.5, '60']) {
    assertProblem(t, await s.admin('POST', `/admin/keys/${id}/rotate`, { grace_seconds: grace }), 400, 'validation_failed', `grace_seconds ${JSON.stringify(grace)}`)
  }
  assertProblem(t, await s.admin('POST', `/admin/keys/${id}/rotate`, { grace: 60 }), 400, 'validation_failed', 'unknown member')
  t.equal((await s.admin('GET', `/admin/keys/${id}`)).body.api_key.secrets.length, 3, 'refused rotations wrote nothing')
  const longest = await s.admin('POST', `/admin/keys/${id}/rotate`, { grace_seconds: 7_776_000 })
  assertJson(t, longest, 200, '90 days is the longest grace')
})
