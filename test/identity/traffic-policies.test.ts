import t, { type Test } from 'tap'
import { MAX_POLICIES_PER_OWNER, type TrafficPolicy } from '../../common/traffic/policy.js'
import { MAX_ROLE_POLICIES_PER_USER } from '../../identity/services/traffic-policies.js'
import { START, iso } from '../helpers/identity.js'
import type { HttpAnswer } from '../helpers/http.js'
import { assertJson, assertProblem } from '../helpers/assert.js'
import {
  ADA, claimsOf, keyHelpers, openSession, refreshTokens, startWithAdmin, type AdminSetup, type KeyHelpers
} from '../helpers/session-setup.js'

/**
 * Traffic policies on roles and API keys (the schema of common/traffic/policy.ts), and
 * key owners: the admin API stores and shows them, refuses what the schema or the
 * list rules refuse (naming the field, changing nothing), a key's verdict carries its
 * own policies then its owner's roles', and an access token carries the roles' as `tpol`.
 */

const DAY_MS = 86_400_000
const PASSWORD = 'correct horse battery staple'

const burst: TrafficPolicy = { name: 'burst', kind: 'rate', limit: 100, window_seconds: 10, partition: 'key' }
const monthly: TrafficPolicy = { name: 'monthly', kind: 'quota', limit: 10_000, period: 'month', partition: 'user', on_redis_loss: 'open' }
const inflight: TrafficPolicy = { name: 'inflight', kind: 'concurrency', limit: 5, partition: 'ip' }
const daily: TrafficPolicy = { name: 'daily', kind: 'quota', limit: 500, period: 'day', partition: 'user' }

type Setup = AdminSetup & KeyHelpers & {
  /** POST /admin/users, asserted 201: the new user's id. */
  createUser: (email: string, roles: string[]) => Promise<string>
  /** PUT /admin/roles/:name, asserted 200: the role view. */
  setRole: (name: string, body: Record<string, unknown>) => Promise<Record<string, any>>
}

async function setup (t: Test): Promise<Setup> {
  const s = await startWithAdmin(t)
  return {
    ...s,
    ...keyHelpers(t, s),
    async createUser (email, roles) {
      const answer = await s.admin('POST', '/admin/users', { email, password: PASSWORD, roles })
      assertJson(t, answer, 201, `create ${email}`)
      return answer.body.user.id as string
    },
    async setRole (name, body) {
      const answer = await s.admin('PUT', `/admin/roles/${name}`, body)
      assertJson(t, answer, 200, `set role ${name}`)
      return answer.body.role
    }
  }
}

/** Policy lists the schema or the list rules refuse, each with the path its violation names (under the field). */
const INVALID_POLICIES: Array<[label: string, policies: unknown[], path: RegExp]> = [
  ['an unknown kind', [{ ...burst, kind: 'burst' }], /^policies\/0\/kind$/],
  ['a rate limit above 100000', [{ ...burst, limit: 100_001 }], /^policies\/0\/limit$/],
  ['a window of 0 seconds', [{ ...burst, window_seconds: 0 }], /^policies\/0\/window_seconds$/],
  ['a window over a day', [{ ...burst, window_seconds: 86_401 }], /^policies\/0\/window_seconds$/],
  ['an unknown member', [monthly, { ...burst, burst: 5 }], /^policies\/1$/],
  ['an unknown partition', [{ ...inflight, partition: 'tenant' }], /^policies\/0\/partition$/],
  ['an unknown period', [{ ...monthly, period: 'week' }], /^policies\/0\/period$/],
  ['a name with upper case', [{ ...burst, name: 'Burst' }], /^policies\/0\/name$/],
  ['a limit of 0', [{ ...inflight, limit: 0 }], /^policies\/0\/limit$/],
  ['a rate without a window', [{ name: 'r', kind: 'rate', limit: 5, partition: 'key' }], /^policies\/0$/],
  ['a concurrency cap with on_redis_loss', [{ ...inflight, on_redis_loss: 'closed' }], /^policies\/0$/],
  ['one name twice', [burst, monthly, { ...inflight, name: 'burst' }], /^policies\/2\/name$/],
  ['more than 8', Array.from({ length: MAX_POLICIES_PER_OWNER + 1 }, (_, i) => ({ ...inflight, name: `p${i}` })), /^policies$/]
]

/** A 400 validation_failed whose violations name the policy field (under `body/` for schema checks). */
function assertNamesField (t: Test, answer: HttpAnswer, path: RegExp, label: string): void {
  assertProblem(t, answer, 400, 'validation_failed', label)
  const paths = (answer.body.errors as Array<{ path: string }>).map((e) => e.path.replace(/^body\//, ''))
  t.ok(paths.some((p) => path.test(p)), `${label}: a violation names ${String(path)}`, { paths })
  t.match(answer.body.detail, /policies/, `${label}: the detail names the field`)
}

t.test('roles: PUT stores policies in order, shows them, and keeps them when a later PUT gives none', async (t) => {
  const s = await setup(t)
  const created = await s.setRole('partner', { permissions: ['users:list'], policies: [monthly, burst] })
  t.same(created, { name: 'partner', permissions: ['users:list'], policies: [monthly, burst], key_max_lifetime_days: null, created_at: iso(START), updated_at: iso(START) })
  t.same((await s.admin('GET', '/admin/roles/partner')).body.role, created, 'show')
  t.same((await s.admin('GET', '/admin/roles')).body.roles, [created], 'list')

  s.clock.advance(1_000)
  const kept = await s.setRole('partner', { permissions: ['users:read'] })
  t.same(kept.policies, [monthly, burst], 'no policies member: the role keeps its own')
  t.same(kept.permissions, ['users:read'], 'the permissions were replaced')
  const replaced = await s.setRole('partner', { permissions: ['users:read'], policies: [inflight] })
  t.same(replaced.policies, [inflight], 'a policies member replaces them all')
  const cleared = await s.setRole('partner', { permissions: ['users:read'], policies: [] })
  t.same(cleared.policies, [], 'an empty list removes them')
  t.same((await s.setRole('fresh', { permissions: [] })).policies, [], 'a new role without policies has none')
})

t.test('roles: invalid policies are 400 naming the field, and nothing changes', async (t) => {
  const s = await setup(t)
  await s.setRole('partner', { permissions: ['users:list'], policies: [burst] })
  for (const [label, policies, path] of INVALID_POLICIES) {
    assertNamesField(t, await s.admin('PUT', '/admin/roles/partner', { permissions: ['*'], policies }), path, label)
    assertNamesField(t, await s.admin('PUT', '/admin/roles/other', { permissions: [], policies }), path, `${label} (new role)`)
  }
  assertProblem(t, await s.admin('PUT', '/admin/roles/partner', { permissions: [], policies: { burst } }), 400, 'validation_failed', 'not a list')
  t.same((await s.admin('GET', '/admin/roles')).body.roles.map((r: Record<string, unknown>) => [r.name, r.permissions, r.policies]),
    [['partner', ['users:list'], [burst]]], 'the role is unchanged and no other was created')
})

t.test('keys: create stores policies and owner, PATCH replaces or keeps the policies', async (t) => {
  const s = await setup(t)
  const owner = await s.createUser('ada@example.com', [])
  const expiresAt = iso(START + DAY_MS)
  const { id, answer } = await s.create({ name: 'partner', permissions: ['users:list'], expires_at: expiresAt, policies: [burst, daily], owner_user_id: owner })
  t.match(answer.body.api_key, { id, policies: [burst, daily], owner_user_id: owner })
  t.same((await s.admin('GET', `/admin/keys/${id}`)).body.api_key.policies, [burst, daily], 'show')
  t.match((await s.admin('GET', '/admin/keys')).body.api_keys, [{ id, policies: [burst, daily], owner_user_id: owner }], 'list')

  const plain = await s.create({ name: 'plain', permissions: [], expires_at: expiresAt })
  t.match(plain.answer.body.api_key, { policies: [], owner_user_id: null }, 'neither given: none, nobody\'s')
  const explicit = await s.create({ name: 'explicit', permissions: [], expires_at: expiresAt, owner_user_id: null })
  t.match(explicit.answer.body.api_key, { owner_user_id: null }, 'owner_user_id null: nobody\'s')

  s.clock.advance(1_000)
  const kept = await s.admin('PATCH', `/admin/keys/${id}`, { permissions: ['users:read'] })
  assertJson(t, kept, 200)
  t.match(kept.body.api_key, { permissions: ['users:read'], policies: [burst, daily], owner_user_id: owner }, 'no policies member: kept')
  const replaced = await s.admin('PATCH', `/admin/keys/${id}`, { policies: [inflight] })
  assertJson(t, replaced, 200)
  t.match(replaced.body.api_key, { permissions: ['users:read'], policies: [inflight], updated_at: iso(START + 1_000) }, 'replaced, the rest kept')
  const cleared = await s.admin('PATCH', `/admin/keys/${id}`, { policies: [] })
  t.same(cleared.body.api_key.policies, [], 'cleared')

  assertJson(t, await s.admin('POST', `/admin/keys/${id}/revoke`), 200, 'revoked')
  assertProblem(t, await s.admin('PATCH', `/admin/keys/${id}`, { policies: [burst] }), 409, 'key_revoked', 'a revoked key keeps what it had')
})

t.test('keys: invalid policies and unknown owners are refused, and nothing is written', async (t) => {
  const s = await setup(t)
  const expiresAt = iso(START + DAY_MS)
  const { id } = await s.create({ name: 'partner', permissions: ['users:list'], expires_at: expiresAt, policies: [burst] })
  for (const [label, policies, path] of INVALID_POLICIES) {
    assertNamesField(t, await s.admin('POST', '/admin/keys', { name: 'other', permissions: [], expires_at: expiresAt, policies }), path, `create: ${label}`)
    assertNamesField(t, await s.admin('PATCH', `/admin/keys/${id}`, { permissions: ['*'], policies }), path, `update: ${label}`)
  }

  const unknown = await s.admin('POST', '/admin/keys', { name: 'other', permissions: [], expires_at: expiresAt, owner_user_id: 'usr_nobody' })
  assertProblem(t, unknown, 404, 'user_not_found', 'an owner who does not exist')
  t.match(unknown.body.detail, /usr_nobody/, 'the detail names the id')
  for (const owner of ['', 'usr-1', 42]) {
    assertProblem(t, await s.admin('POST', '/admin/keys', { name: 'other', permissions: [], expires_at: expiresAt, owner_user_id: owner }), 400,
      'validation_failed', `owner_user_id ${JSON.stringify(owner)}`)
  }

  const keys = (await s.admin('GET', '/admin/keys')).body.api_keys as Array<Record<string, unknown>>
  t.same(keys.map((k) => [k.name, k.permissions, k.policies]), [['partner', ['users:list'], [burst]]], 'the key is unchanged and no other was created')
})

t.test('verify: a key answers its owner, its own policies, then each of the owner\'s roles\' in role order', async (t) => {
  const s = await setup(t)
  await s.setRole('zeta', { permissions: ['users:list'], policies: [daily] })
  await s.setRole('alpha', { permissions: ['users:read'], policies: [monthly, inflight] })
  await s.setRole('plain', { permissions: ['tasks:*'] })
  const owner = await s.createUser('ada@example.com', ['zeta', 'alpha', 'plain'])
  const expiresAt = iso(START + DAY_MS)
  const owned = await s.create({ name: 'owned', permissions: ['users:list'], expires_at: expiresAt, policies: [burst, { ...daily, limit: 5 }], owner_user_id: owner })

  const verdict = await s.verify(owned.key)
  t.same(verdict, {
    valid: true,
    key: {
      id: owned.id,
      name: 'owned',
      permissions: ['users:list'],
      expires_at: expiresAt,
      owner_user_id: owner,
      policies: [
        { source: 'key', policy: burst },
        { source: 'key', policy: { ...daily, limit: 5 } },
        { source: 'role:alpha', policy: monthly },
        { source: 'role:alpha', policy: inflight },
        { source: 'role:zeta', policy: daily }
      ]
    },
    deprecation: null
  }, 'the key\'s own first; a name used by both the key and a role is kept apart by its source')

  await s.setRole('alpha', { permissions: ['users:read'], policies: [] })
  t.same((await s.verify(owned.key)).key.policies.map((g: { source: string }) => g.source), ['key', 'key', 'role:zeta'],
    'a role\'s change shows in the next verification')
  assertJson(t, await s.admin('PUT', `/admin/users/${owner}/roles`, { roles: ['plain'] }), 200)
  t.same((await s.verify(owned.key)).key.policies, [{ source: 'key', policy: burst }, { source: 'key', policy: { ...daily, limit: 5 } }],
    'and so does a change of the owner\'s roles')

  const own = await s.create({ name: 'own', permissions: [], expires_at: expiresAt })
  t.match(await s.verify(own.key), { valid: true, key: { owner_user_id: null, policies: [] } }, 'a key of its own, without policies')
  const rolesOnly = await s.create({ name: 'roles-only', permissions: [], expires_at: expiresAt, owner_user_id: await s.createUser('bob@example.com', ['zeta']) })
  t.same((await s.verify(rolesOnly.key)).key.policies, [{ source: 'role:zeta', policy: daily }], 'a key without policies of its own gets its owner\'s roles\'')
})

t.test('tokens: an access token carries the user\'s roles\' policies as tpol, from login and from each refresh', async (t) => {
  const s = await setup(t)
  await s.setRole('zeta', { permissions: ['users:list'], policies: [daily] })
  await s.setRole('alpha', { permissions: [], policies: [monthly] })
  await s.createUser(ADA.email, ['zeta', 'alpha'])
  await s.createUser('bob@example.com', ['alpha'])
  await s.setRole('plain', { permissions: ['users:read'] })
  await s.createUser('eve@example.com', ['plain'])

  const login = await openSession(t, s, ADA)
  t.same(claimsOf(login.access_token).tpol, [{ source: 'role:alpha', policy: monthly }, { source: 'role:zeta', policy: daily }], 'login')
  t.same(claimsOf(login.access_token).permissions, ['users:list'], 'the permissions are still there')

  await s.setRole('alpha', { permissions: [], policies: [inflight] })
  const refreshed = await refreshTokens(s, login)
  assertJson(t, refreshed, 200, 'refresh')
  t.same(claimsOf(refreshed.body.access_token).tpol, [{ source: 'role:alpha', policy: inflight }, { source: 'role:zeta', policy: daily }],
    'a refresh carries the roles\' policies as they are now')

  const eve = await openSession(t, s, { email: 'eve@example.com', password: PASSWORD })
  t.notOk('tpol' in claimsOf(eve.access_token), 'no claim when the roles grant no policy')
  const bob = await openSession(t, s, { email: 'bob@example.com', password: PASSWORD })
  t.same(claimsOf(bob.access_token).tpol, [{ source: 'role:alpha', policy: inflight }])
})

t.test('a user\'s roles grant at most what fits beside a key\'s own policies', async (t) => {
  const s = await setup(t)
  const eight = (prefix: string): TrafficPolicy[] => Array.from({ length: MAX_POLICIES_PER_OWNER }, (_, i) => ({ ...inflight, name: `${prefix}${i}` }))
  const full = MAX_ROLE_POLICIES_PER_USER / MAX_POLICIES_PER_OWNER
  t.equal(full, 7, 'seven roles of eight policies fill a user\'s room')
  const names = Array.from({ length: full + 1 }, (_, i) => `r${i}`)
  for (const name of names) await s.setRole(name, { permissions: [], policies: eight(name) })
  await s.setRole('empty', { permissions: [] })

  const user = await s.createUser(ADA.email, names.slice(0, full))
  const tooMany = await s.admin('POST', '/admin/users', { email: 'bob@example.com', password: PASSWORD, roles: names })
  assertProblem(t, tooMany, 400, 'validation_failed', 'creating a user whose roles grant too many')
  t.match(tooMany.body.errors, [{ path: 'roles', message: /64 traffic policies.*at most 56/ }])
  assertProblem(t, await s.admin('PUT', `/admin/users/${user}/roles`, { roles: names }), 400, 'validation_failed', 'giving the user one role more')

  assertJson(t, await s.admin('PUT', `/admin/users/${user}/roles`, { roles: [...names.slice(0, full), 'empty'] }), 200, 'holding a role without policies')
  const grow = await s.admin('PUT', '/admin/roles/empty', { permissions: [], policies: [inflight] })
  assertProblem(t, grow, 400, 'validation_failed', 'a role that would grow past the room of one of its holders')
  t.match(grow.body.errors, [{ path: 'policies', message: /a holder of role empty 57 traffic policies/ }])
  t.same((await s.admin('GET', '/admin/roles/empty')).body.role.policies, [], 'unchanged')
  // A role nobody holds may have policies, whatever its future holders hold (setRole asserts 200).
  await s.setRole('spare', { permissions: [], policies: [inflight] })
  t.match((await s.admin('GET', `/admin/users/${user}`)).body.user, { roles: [...names.slice(0, full), 'empty'].sort() }, 'the user is unchanged by the refusals')

  const key = await s.create({ name: 'full', permissions: [], expires_at: iso(START + DAY_MS), policies: eight('k'), owner_user_id: user })
  t.equal((await s.verify(key.key)).key.policies.length, 64, 'a key with all its own and a full owner: exactly what the gateway takes')
})
