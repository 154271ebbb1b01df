import t, { type Test } from 'tap'
import { START, iso } from '../helpers/identity.js'
import type { HttpAnswer } from '../helpers/http.js'
import { assertJson, assertProblem } from '../helpers/assert.js'
import { claimsOf, postLogin, refreshTokens, startWithAdmin, type AdminSetup, type TokenSet } from '../helpers/session-setup.js'

/**
 * /admin/users over real sockets: creation rules (e-mail, OWASP ASVS password
 * lengths, roles), roles → permissions, password changes and disabling (both end
 * every session of the user), and a user's sessions. No answer carries a hash.
 */

const PASSWORD = 'correct horse battery'

interface Setup extends AdminSetup {
  login: (email: string, password: string, userAgent?: string) => Promise<HttpAnswer>
  refresh: (tokenSet: TokenSet) => Promise<HttpAnswer>
}

/**
 * Identity on a fake clock with `reader` and `writer` roles. Every admin answer is
 * checked on the spot: it never carries an argon2 hash.
 */
async function setup (t: Test): Promise<Setup> {
  const s = await startWithAdmin(t)
  const admin: Setup['admin'] = async (method, path, body) => {
    const answer = await s.admin(method, path, body)
    t.notOk(answer.text.includes('$argon2'), `${method} ${path}: no password hash in the answer`)
    return answer
  }
  assertJson(t, await admin('PUT', '/admin/roles/reader', { permissions: ['users:read', 'users:list'] }), 200)
  assertJson(t, await admin('PUT', '/admin/roles/writer', { permissions: ['tasks:*'] }), 200)
  return {
    ...s,
    admin,
    login: async (email, password, userAgent = 'portier-tests') => await postLogin(s, { email, password }, { 'user-agent': userAgent }),
    refresh: async (tokenSet) => await refreshTokens(s, tokenSet)
  }
}

t.test('happy: create, show and list users', async (t) => {
  const s = await setup(t)
  const created = await s.admin('POST', '/admin/users', { email: 'ada@example.com', password: PASSWORD, roles: ['writer', 'reader'] })
  assertJson(t, created, 201)
  t.same(Object.keys(created.body.user).sort(),
    ['created_at', 'disabled_at', 'email', 'id', 'password_changed_at', 'permissions', 'roles', 'status', 'updated_at'],
    'exactly the documented members, no hash')
  t.match(created.body, {
    user: {
      id: /^usr_[0-9A-Za-z]{16}$/,
      email: 'ada@example.com',
      roles: ['reader', 'writer'],
      permissions: ['tasks:*', 'users:list', 'users:read'],
      status: 'active',
      created_at: iso(START),
      updated_at: iso(START),
      password_changed_at: iso(START),
      disabled_at: null
    }
  })
  const ada = created.body.user

  s.clock.advance(1_000)
  const bob = await s.admin('POST', '/admin/users', { email: 'bob@example.com', password: PASSWORD })
  assertJson(t, bob, 201)
  t.match(bob.body.user, { email: 'bob@example.com', roles: [], permissions: [], created_at: iso(START + 1_000) }, 'roles default to none')

  const shown = await s.admin('GET', `/admin/users/${ada.id as string}`)
  assertJson(t, shown, 200)
  t.same(shown.body, { user: ada })

  const listed = await s.admin('GET', '/admin/users')
  assertJson(t, listed, 200)
  t.same(listed.body, { users: [ada, bob.body.user] }, 'oldest first')

  // The password really was stored, as an argon2id hash only.
  const stored = s.identity.db.prepare('SELECT password_hash FROM users WHERE id = ?').pluck().get(ada.id) as string
  t.match(stored, /^\$argon2id\$/)
  t.notOk(stored.includes(PASSWORD))
  assertJson(t, await s.login('ada@example.com', PASSWORD), 201, 'the new user logs in')
})

t.test('error: the e-mail must be an address', async (t) => {
  const s = await setup(t)
  for (const email of ['not-an-email', 'ada@', '@example.com', 'ada example@example.com', '']) {
    const answer = await s.admin('POST', '/admin/users', { email, password: PASSWORD })
    assertProblem(t, answer, 400, 'validation_failed', JSON.stringify(email))
    t.match(answer.body.errors, [{ path: 'body/email' }])
  }
  assertProblem(t, await s.admin('POST', '/admin/users', { password: PASSWORD }), 400, 'validation_failed', 'missing e-mail')
  t.same((await s.admin('GET', '/admin/users')).body, { users: [] }, 'nothing was created')
})

t.test('passwords: 8 to 128 characters, no composition rules (OWASP ASVS)', async (t) => {
  const s = await setup(t)
  const cases: Array<[password: string, status: number]> = [
    ['a'.repeat(7), 400],
    ['aaaaaaaa', 201],
    ['b'.repeat(64), 201],
    ['c'.repeat(128), 201],
    ['d'.repeat(129), 400]
  ]
  for (const [i, [password, status]] of cases.entries()) {
    const email = `user${i}@example.com`
    const answer = await s.admin('POST', '/admin/users', { email, password })
    const label = `${password.length} characters`
    if (status === 400) {
      assertProblem(t, answer, 400, 'validation_failed', label)
      t.match(answer.body.errors, [{ path: 'body/password' }])
      t.notOk(answer.text.includes(password), 'the password is not echoed')
      t.equal(s.identity.db.prepare('SELECT count(*) FROM users WHERE email = ?').pluck().get(email), 0, `${label}: nothing written`)
    } else {
      assertJson(t, answer, 201, label)
      assertJson(t, await s.login(email, password), 201, `${label}: logs in`)
    }
  }
  assertProblem(t, await s.admin('POST', '/admin/users', { email: 'n@example.com', password: 12345678 }), 400, 'validation_failed',
    'a number is not a password (bodies are not coerced)')

  // The same rule guards a password change.
  const user = (await s.admin('GET', '/admin/users')).body.users[0]
  assertProblem(t, await s.admin('PUT', `/admin/users/${user.id as string}/password`, { password: 'x'.repeat(7) }), 400, 'validation_failed', 'change to 7')
  assertProblem(t, await s.admin('PUT', `/admin/users/${user.id as string}/password`, { password: 'x'.repeat(129) }), 400, 'validation_failed', 'change to 129')
  assertJson(t, await s.admin('PUT', `/admin/users/${user.id as string}/password`, { password: 'x'.repeat(128) }), 200, 'change to 128')
  assertJson(t, await s.login(user.email, 'x'.repeat(128)), 201, 'the 128-character password logs in')
})

t.test('error: a duplicate e-mail is refused, case-insensitively', async (t) => {
  const s = await setup(t)
  assertJson(t, await s.admin('POST', '/admin/users', { email: 'ada@example.com', password: PASSWORD }), 201)
  for (const email of ['ada@example.com', 'ADA@example.com', 'Ada@Example.COM']) {
    const answer = await s.admin('POST', '/admin/users', { email, password: 'another password' })
    assertProblem(t, answer, 409, 'email_taken', email)
  }
  t.equal((await s.admin('GET', '/admin/users')).body.users.length, 1)
  assertJson(t, await s.login('ada@example.com', PASSWORD), 201, 'the first account keeps its password')
  assertProblem(t, await s.login('ada@example.com', 'another password'), 401, 'invalid_credentials', 'the refused password was not stored')
})

t.test('error: an unknown role is refused and nothing is written', async (t) => {
  const s = await setup(t)
  const answer = await s.admin('POST', '/admin/users', { email: 'ada@example.com', password: PASSWORD, roles: ['reader', 'ghost'] })
  assertProblem(t, answer, 400, 'unknown_role')
  t.match(answer.body.detail, /ghost/)
  t.same((await s.admin('GET', '/admin/users')).body, { users: [] })

  const ada = (await s.admin('POST', '/admin/users', { email: 'ada@example.com', password: PASSWORD, roles: ['reader'] })).body.user
  const setRoles = await s.admin('PUT', `/admin/users/${ada.id as string}/roles`, { roles: ['writer', 'ghost'] })
  assertProblem(t, setRoles, 400, 'unknown_role', 'set roles')
  t.match((await s.admin('GET', `/admin/users/${ada.id as string}`)).body.user, { roles: ['reader'], permissions: ['users:list', 'users:read'] },
    'the roles did not change')
  assertProblem(t, await s.admin('POST', '/admin/users', { email: 'x@example.com', password: PASSWORD, roles: ['Bad Role'] }),
    400, 'validation_failed', 'a role name that cannot exist')
})

t.test('error: closed bodies', async (t) => {
  const s = await setup(t)
  const extra = await s.admin('POST', '/admin/users', { email: 'ada@example.com', password: PASSWORD, is_admin: true })
  assertProblem(t, extra, 400, 'validation_failed', 'unknown member')
  t.match(extra.body.errors, [{ path: 'body', message: /is_admin/ }])
  assertProblem(t, await s.admin('POST', '/admin/users', { email: 'ada@example.com' }), 400, 'validation_failed', 'no password')
  t.same((await s.admin('GET', '/admin/users')).body, { users: [] })
})

t.test('error: an unknown user id is 404 user_not_found on every user route', async (t) => {
  const s = await setup(t)
  const routes: Array<[string, string, unknown?]> = [
    ['GET', '/admin/users/usr_nobody'],
    ['PUT', '/admin/users/usr_nobody/roles', { roles: [] }],
    ['PUT', '/admin/users/usr_nobody/password', { password: 'a new password' }],
    ['POST', '/admin/users/usr_nobody/disable'],
    ['POST', '/admin/users/usr_nobody/enable'],
    ['GET', '/admin/users/usr_nobody/sessions'],
    ['DELETE', '/admin/users/usr_nobody/sessions']
  ]
  for (const [method, path, body] of routes) {
    const answer = await s.admin(method, path, body)
    assertProblem(t, answer, 404, 'user_not_found', `${method} ${path}`)
    t.match(answer.body.detail, /usr_nobody/)
  }
  assertProblem(t, await s.admin('GET', '/admin/users/not-an-id!'), 400, 'validation_failed', 'a malformed id')
})

t.test('happy: setting roles replaces them; permissions follow the roles', async (t) => {
  const s = await setup(t)
  const ada = (await s.admin('POST', '/admin/users', { email: 'ada@example.com', password: PASSWORD, roles: ['reader'] })).body.user
  t.same(claimsOf((await s.login('ada@example.com', PASSWORD)).body.access_token).permissions, ['users:list', 'users:read'])

  s.clock.advance(5_000)
  const changed = await s.admin('PUT', `/admin/users/${ada.id as string}/roles`, { roles: ['writer'] })
  assertJson(t, changed, 200)
  t.match(changed.body.user, { roles: ['writer'], permissions: ['tasks:*'], updated_at: iso(START + 5_000) })
  t.same(claimsOf((await s.login('ada@example.com', PASSWORD)).body.access_token).permissions, ['tasks:*'],
    'new access tokens carry the new permissions')

  // Changing a role's permissions changes its holders' permissions.
  assertJson(t, await s.admin('PUT', '/admin/roles/writer', { permissions: ['tasks:create', 'meetings:*'] }), 200)
  t.match((await s.admin('GET', `/admin/users/${ada.id as string}`)).body.user, { roles: ['writer'], permissions: ['meetings:*', 'tasks:create'] })

  const both = await s.admin('PUT', `/admin/users/${ada.id as string}/roles`, { roles: ['writer', 'reader', 'writer'] })
  t.match(both.body.user, { roles: ['reader', 'writer'], permissions: ['meetings:*', 'tasks:create', 'users:list', 'users:read'] },
    'the union of the roles, duplicates dropped')

  const none = await s.admin('PUT', `/admin/users/${ada.id as string}/roles`, { roles: [] })
  t.match(none.body.user, { roles: [], permissions: [] })
  t.same(claimsOf((await s.login('ada@example.com', PASSWORD)).body.access_token).permissions, [])
})

t.test('happy: a password change ends all of the user\'s sessions', async (t) => {
  const s = await setup(t)
  const ada = (await s.admin('POST', '/admin/users', { email: 'ada@example.com', password: PASSWORD })).body.user
  await s.admin('POST', '/admin/users', { email: 'bob@example.com', password: PASSWORD })
  const first = (await s.login('ada@example.com', PASSWORD)).body
  const second = (await s.login('ada@example.com', PASSWORD)).body
  const bobs = (await s.login('bob@example.com', PASSWORD)).body

  s.clock.advance(60_000)
  const changed = await s.admin('PUT', `/admin/users/${ada.id as string}/password`, { password: 'a brand new passphrase' })
  assertJson(t, changed, 200)
  t.match(changed.body.user, { id: ada.id, password_changed_at: iso(START + 60_000), status: 'active' })
  t.notOk(changed.text.includes('a brand new passphrase'), 'the password is not echoed')

  assertProblem(t, await s.login('ada@example.com', PASSWORD), 401, 'invalid_credentials', 'the old password')
  const fresh = await s.login('ada@example.com', 'a brand new passphrase')
  assertJson(t, fresh, 201, 'the new password logs in')

  assertProblem(t, await s.refresh(first), 401, 'session_revoked', 'first session')
  assertProblem(t, await s.refresh(second), 401, 'session_revoked', 'second session')
  assertJson(t, await s.refresh(fresh.body), 200, 'the session opened after the change works')
  assertJson(t, await s.refresh(bobs), 200, 'another user\'s session is untouched')

  const sessions = (await s.admin('GET', `/admin/users/${ada.id as string}/sessions`)).body.sessions as Array<Record<string, unknown>>
  t.equal(sessions.length, 3)
  t.same(sessions.filter((x) => x.status === 'revoked').map((x) => [x.revoked_reason, x.revoked_at]),
    [['password_changed', iso(START + 60_000)], ['password_changed', iso(START + 60_000)]])
})

t.test('happy: disabling ends every session and refuses login; enabling lets the user in again', async (t) => {
  const s = await setup(t)
  const ada = (await s.admin('POST', '/admin/users', { email: 'ada@example.com', password: PASSWORD })).body.user
  const first = (await s.login('ada@example.com', PASSWORD)).body
  const second = (await s.login('ada@example.com', PASSWORD)).body

  s.clock.advance(1_000)
  const disabled = await s.admin('POST', `/admin/users/${ada.id as string}/disable`)
  assertJson(t, disabled, 200)
  t.match(disabled.body.user, { status: 'disabled', disabled_at: iso(START + 1_000) })
  assertProblem(t, await s.refresh(first), 401, 'session_revoked', 'first session')
  assertProblem(t, await s.refresh(second), 401, 'session_revoked', 'second session')
  assertProblem(t, await s.login('ada@example.com', PASSWORD), 401, 'user_disabled', 'the right password')
  assertProblem(t, await s.login('ada@example.com', 'a wrong password'), 401, 'invalid_credentials',
    'a wrong password does not learn that the account is disabled')
  const sessions = (await s.admin('GET', `/admin/users/${ada.id as string}/sessions`)).body.sessions as Array<Record<string, unknown>>
  t.same(sessions.map((x) => [x.status, x.revoked_reason]), [['revoked', 'user_disabled'], ['revoked', 'user_disabled']])

  s.clock.advance(1_000)
  const again = await s.admin('POST', `/admin/users/${ada.id as string}/disable`)
  assertJson(t, again, 200, 'disabling twice')
  t.equal(again.body.user.disabled_at, iso(START + 1_000), 'keeps the first disabled_at')

  const enabled = await s.admin('POST', `/admin/users/${ada.id as string}/enable`)
  assertJson(t, enabled, 200)
  t.match(enabled.body.user, { status: 'active', disabled_at: null })
  const back = await s.login('ada@example.com', PASSWORD)
  assertJson(t, back, 201, 'logs in again')
  assertJson(t, await s.refresh(back.body), 200)
  assertProblem(t, await s.refresh(first), 401, 'session_revoked', 'sessions ended by disabling stay ended')
})

t.test('happy: list and revoke all of a user\'s sessions', async (t) => {
  const s = await setup(t)
  const ada = (await s.admin('POST', '/admin/users', { email: 'ada@example.com', password: PASSWORD })).body.user
  await s.admin('POST', '/admin/users', { email: 'bob@example.com', password: PASSWORD })
  const one = (await s.login('ada@example.com', PASSWORD, 'agent-one')).body
  s.clock.advance(1_000)
  const two = (await s.login('ada@example.com', PASSWORD, 'agent-two')).body
  const bobs = (await s.login('bob@example.com', PASSWORD)).body
  const sid = (tokenSet: { access_token: string }): string => claimsOf(tokenSet.access_token).sid as string

  const listed = await s.admin('GET', `/admin/users/${ada.id as string}/sessions`)
  assertJson(t, listed, 200)
  t.same(listed.body, {
    sessions: [
      {
        id: sid(two),
        user_id: ada.id,
        ip_address: '127.0.0.1',
        user_agent: 'agent-two',
        status: 'active',
        created_at: iso(START + 1_000),
        last_used_at: iso(START + 1_000),
        expires_at: iso(START + 1_000 + 30 * 86_400_000),
        revoked_at: null,
        revoked_reason: null
      },
      {
        id: sid(one),
        user_id: ada.id,
        ip_address: '127.0.0.1',
        user_agent: 'agent-one',
        status: 'active',
        created_at: iso(START),
        last_used_at: iso(START),
        expires_at: iso(START + 30 * 86_400_000),
        revoked_at: null,
        revoked_reason: null
      }
    ]
  }, 'newest first, only this user\'s')

  s.clock.advance(1_000)
  const revoked = await s.admin('DELETE', `/admin/users/${ada.id as string}/sessions`)
  assertJson(t, revoked, 200)
  t.same([...revoked.body.revoked].sort(), [sid(one), sid(two)].sort())
  assertProblem(t, await s.refresh(one), 401, 'session_revoked', 'first session')
  assertProblem(t, await s.refresh(two), 401, 'session_revoked', 'second session')
  assertJson(t, await s.refresh(bobs), 200, 'another user\'s session is untouched')
  t.same((await s.admin('GET', `/admin/users/${ada.id as string}/sessions`)).body.sessions.map((x: Record<string, unknown>) => [x.status, x.revoked_reason, x.revoked_at]),
    [['revoked', 'admin', iso(START + 2_000)], ['revoked', 'admin', iso(START + 2_000)]])

  const twice = await s.admin('DELETE', `/admin/users/${ada.id as string}/sessions`)
  assertJson(t, twice, 200)
  t.same(twice.body, { revoked: [] }, 'nothing left to revoke')
})
