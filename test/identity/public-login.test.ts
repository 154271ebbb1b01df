import t, { type Test } from 'tap'
import argon2 from 'argon2'
import { decodeJwt } from 'jose'
import { fakeClock } from '../helpers/identity.js'
import { PROBLEM_JSON, assertJson, assertProblem, assertStatus } from '../helpers/assert.js'
import { ADA, startWithUser as startWithAda } from '../helpers/session-setup.js'
import { loadIdentityConfig } from '../../identity/config.js'
import { createIdentityMetrics } from '../../identity/observability/metrics.js'
import { createLogin } from '../../identity/services/login.js'
import { createLoginThrottle } from '../../identity/services/login-throttle.js'
import { createArgon2Hashers, type PasswordHasher } from '../../identity/services/password-hasher.js'
import type { Sessions, TokenSet } from '../../identity/services/sessions.js'
import type { Users } from '../../identity/services/users.js'
import type { UserRecord, UsersStore } from '../../identity/store/users-store.js'
import { WITH_SIGNING_KEY_ENCRYPTION } from '../helpers/signing-key-encryption.js'

/**
 * POST /sessions (login): the token set, the identical answer for an unknown e-mail
 * and a wrong password (same body, same work), disabled users, and what a session
 * records about its client.
 */

const INVALID_CREDENTIALS = {
  type: 'urn:portier:problem:invalid_credentials',
  title: 'Invalid credentials',
  status: 401,
  detail: 'The e-mail or password is incorrect.',
  code: 'invalid_credentials'
}

/** Ada holds `reader` (users:list, users:read); `login` here is any POST /sessions, unchecked. */
async function startWithUser (t: Test) {
  const s = await startWithAda(t, { roles: { reader: ['users:list', 'users:read'] }, checkLookups: true })
  return { ...s, login: s.loginAs, sessionsOf: async () => await s.sessions(s.userId) }
}

t.test('happy', async (t) => {
  t.test('a right e-mail and password get 201 and a token set that is not cached', async (t) => {
    const { login, clock } = await startWithUser(t)
    const answer = await login(ADA)
    assertJson(t, answer, 201)
    t.equal(answer.headers['cache-control'], 'no-store')
    t.same(Object.keys(answer.body).sort(), ['access_token', 'expires_in', 'refresh_token', 'token_type'])
    t.match(answer.body, {
      token_type: 'Bearer',
      expires_in: 600,
      access_token: /^[\w-]+\.[\w-]+\.[\w-]+$/,
      refresh_token: /^prt_[0-9A-Za-z]{43}$/
    })
    t.equal(decodeJwt(answer.body.access_token).iat, clock.now() / 1000)
  })

  t.test('the e-mail is matched case-insensitively and trimmed', async (t) => {
    const { login } = await startWithUser(t)
    const answer = await login({ email: '  ADA@Example.COM ', password: ADA.password })
    assertStatus(t, answer, 201)
  })

  t.test('each login opens its own session, recording IP address and user agent', async (t) => {
    const { login, sessionsOf, userId } = await startWithUser(t)
    const first = await login(ADA, { 'user-agent': 'PortierTest/1.0 (laptop)' })
    assertStatus(t, first, 201)
    const second = await login(ADA, { 'user-agent': 'PortierTest/2.0 (phone)' })
    assertStatus(t, second, 201)
    const firstSid = decodeJwt(first.body.access_token).sid
    const secondSid = decodeJwt(second.body.access_token).sid
    t.not(firstSid, secondSid)
    const sessions = await sessionsOf()
    t.equal(sessions.length, 2)
    const byId = new Map(sessions.map((s) => [s.id, s]))
    t.match(byId.get(firstSid), {
      id: firstSid,
      user_id: userId,
      ip_address: '127.0.0.1',
      user_agent: 'PortierTest/1.0 (laptop)',
      status: 'active',
      created_at: '2026-01-01T00:00:00.000Z',
      last_used_at: '2026-01-01T00:00:00.000Z',
      revoked_at: null,
      revoked_reason: null
    })
    t.match(byId.get(secondSid), { id: secondSid, ip_address: '127.0.0.1', user_agent: 'PortierTest/2.0 (phone)', status: 'active' })
  })
})

t.test('error', async (t) => {
  t.test('an unknown e-mail and a wrong password get the same 401 answer', async (t) => {
    const { login, sessionsOf } = await startWithUser(t)
    const unknown = await login({ email: 'nobody@example.com', password: ADA.password })
    const wrong = await login({ email: ADA.email, password: 'not the password' })
    for (const answer of [unknown, wrong]) {
      assertStatus(t, answer, 401)
      t.equal(answer.headers['content-type'], PROBLEM_JSON)
      t.equal(answer.headers['www-authenticate'], 'Bearer realm="portier"')
    }
    t.same(wrong.body, INVALID_CREDENTIALS)
    t.same(unknown.body, wrong.body)
    t.equal(unknown.text, wrong.text, 'byte-identical bodies')
    t.equal(unknown.headers['content-length'], wrong.headers['content-length'])
    t.same(await sessionsOf(), [], 'no session was opened')
  })

  t.test('a disabled user with the right password gets 401 user_disabled and no session', async (t) => {
    const { login, admin, userId, sessionsOf } = await startWithUser(t)
    const disabled = await admin('POST', `/admin/users/${userId}/disable`)
    assertStatus(t, disabled, 200)
    const answer = await login(ADA)
    assertProblem(t, answer, 401, 'user_disabled')
    t.same(answer.body, {
      type: 'urn:portier:problem:user_disabled',
      title: 'User disabled',
      status: 401,
      detail: 'This user account is disabled.',
      code: 'user_disabled'
    })
    t.equal(answer.headers['www-authenticate'], 'Bearer realm="portier"')
    t.same(await sessionsOf(), [])

    t.test('re-enabled, the user can log in again', async (t) => {
      t.equal((await admin('POST', `/admin/users/${userId}/enable`)).status, 200)
      t.equal((await login(ADA)).status, 201)
    })
  })
})

t.test('security', async (t) => {
  t.test('a disabled user with a wrong password learns nothing about the account state', async (t) => {
    const { login, admin, userId } = await startWithUser(t)
    t.equal((await admin('POST', `/admin/users/${userId}/disable`)).status, 200)
    const answer = await login({ email: ADA.email, password: 'not the password' })
    t.equal(answer.status, 401)
    t.same(answer.body, INVALID_CREDENTIALS)
  })

  t.test('X-Forwarded-For is ignored when no proxy is trusted (the IP cannot be spoofed)', async (t) => {
    const { login, sessionsOf } = await startWithUser(t)
    const answer = await login(ADA, { 'x-forwarded-for': '203.0.113.7' })
    assertStatus(t, answer, 201)
    t.match(await sessionsOf(), [{ ip_address: '127.0.0.1' }])
  })

  t.test('an oversized user agent is cut to 512 characters', async (t) => {
    const { login, sessionsOf } = await startWithUser(t)
    const answer = await login(ADA, { 'user-agent': 'U'.repeat(2000) })
    assertStatus(t, answer, 201)
    const [session] = await sessionsOf()
    t.equal((session?.user_agent as string).length, 512)
  })

  t.test('the password is compared exactly: a case or whitespace variant is refused', async (t) => {
    const { login } = await startWithUser(t)
    const variants: Array<[label: string, password: string]> = [
      ['upper case', ADA.password.toUpperCase()],
      ['a leading space', ` ${ADA.password}`],
      ['a trailing space', `${ADA.password} `]
    ]
    for (const [label, password] of variants) {
      const answer = await login({ email: ADA.email, password })
      assertStatus(t, answer, 401, `the password with ${label}: status 401`)
      t.same(answer.body, INVALID_CREDENTIALS)
    }
  })
})

/**
 * Equal work for an unknown e-mail: structural, not timed. The login service must
 * run exactly one password verification on every path that reaches the password
 * check: against the user's hash when the e-mail is known, against the dummy hash
 * when it is not.
 */
t.test('security: an unknown e-mail costs the same verification as a wrong password', async (t) => {
  const KNOWN: UserRecord = {
    id: 'usr_known',
    email: 'ada@example.com',
    passwordHash: '$argon2id$stored-hash-of-ada',
    createdAt: 0,
    updatedAt: 0,
    passwordChangedAt: 0,
    disabledAt: null,
    roles: []
  }
  const TOKEN_SET: TokenSet = { token_type: 'Bearer', expires_in: 600, access_token: 'at', refresh_token: 'rt' }

  function spyLogin (options: { maxFailuresPerEmail?: number, disabled?: boolean } = {}) {
    const calls: Array<{ fn: string, args: string[] }> = []
    const hasher: PasswordHasher = {
      hash: async (plain) => { calls.push({ fn: 'hash', args: [plain] }); return '$argon2id$new' },
      verify: async (hash, plain) => { calls.push({ fn: 'verify', args: [hash, plain] }); return plain === 'right password' },
      verifyAgainstDummy: async (plain) => { calls.push({ fn: 'verifyAgainstDummy', args: [plain] }) },
      needsRehash: () => false
    }
    const user = { ...KNOWN, disabledAt: options.disabled === true ? 1 : null }
    const opened: string[] = []
    const login = createLogin({
      users: { byEmail: (email: string) => (email === KNOWN.email ? user : null) } as unknown as UsersStore,
      userAccounts: { rehash: async () => {} } as unknown as Users,
      hasher,
      sessions: { open: async (userId: string) => { opened.push(userId); return TOKEN_SET } } as unknown as Sessions,
      throttle: createLoginThrottle({
        enabled: true, maxFailuresPerEmail: options.maxFailuresPerEmail ?? 100, maxFailuresPerIp: 100, windowSeconds: 900, clock: fakeClock()
      }),
      metrics: createIdentityMetrics({ processMetrics: false })
    })
    const attempt = async (email: string, password: string): Promise<unknown> =>
      await login({ email, password, ipAddress: '192.0.2.1', userAgent: 'spy' }).catch((err: unknown) => err)
    return { calls, opened, attempt }
  }

  const problemOf = (err: unknown) => {
    const e = err as { code?: string, statusCode?: number, message?: string, title?: string }
    return { code: e.code, statusCode: e.statusCode, message: e.message, title: e.title }
  }

  t.test('unknown e-mail: one verification against the dummy hash, with the presented password', async (t) => {
    const { calls, attempt, opened } = spyLogin()
    const err = await attempt('nobody@example.com', 'some password')
    t.same(calls, [{ fn: 'verifyAgainstDummy', args: ['some password'] }])
    t.same(problemOf(err), { code: 'invalid_credentials', statusCode: 401, message: 'The e-mail or password is incorrect.', title: 'Invalid credentials' })
    t.same(opened, [])
  })

  t.test('known e-mail, wrong password: one verification against the stored hash, same error', async (t) => {
    const unknown = spyLogin()
    const known = spyLogin()
    const unknownErr = await unknown.attempt('nobody@example.com', 'some password')
    const knownErr = await known.attempt(KNOWN.email, 'some password')
    t.same(known.calls, [{ fn: 'verify', args: [KNOWN.passwordHash, 'some password'] }])
    t.equal(known.calls.length, unknown.calls.length, 'the same number of argon2 verifications on both paths')
    t.same(problemOf(knownErr), problemOf(unknownErr))
  })

  t.test('every unknown e-mail pays the dummy verification, not only the first', async (t) => {
    const { calls, attempt } = spyLogin()
    for (const email of ['a@example.com', 'b@example.com', 'c@example.com']) await attempt(email, `pw of ${email}`)
    t.same(calls.map((c) => c.fn), ['verifyAgainstDummy', 'verifyAgainstDummy', 'verifyAgainstDummy'])
    t.same(calls.map((c) => c.args[0]), ['pw of a@example.com', 'pw of b@example.com', 'pw of c@example.com'])
  })

  t.test('a disabled user is checked only after the password was verified', async (t) => {
    const { calls, attempt, opened } = spyLogin({ disabled: true })
    const err = await attempt(KNOWN.email, 'right password')
    t.same(calls, [{ fn: 'verify', args: [KNOWN.passwordHash, 'right password'] }])
    t.match(problemOf(err), { code: 'user_disabled', statusCode: 401 })
    t.same(opened, [])
  })

  t.test('a throttled attempt does no password work at all', async (t) => {
    const { calls, attempt } = spyLogin({ maxFailuresPerEmail: 1 })
    await attempt('nobody@example.com', 'first try')
    calls.length = 0
    const err = await attempt('nobody@example.com', 'second try')
    t.same(calls, [])
    t.match(problemOf(err), { code: 'login_throttled', statusCode: 429 })
  })

  t.test('the dummy verification is a real argon2id verification with the configured parameters', async (t) => {
    const config = loadIdentityConfig({
      IDENTITY_ADMIN_TOKEN: 'a'.repeat(32), IDENTITY_SERVICE_TOKEN: 's'.repeat(32), ...WITH_SIGNING_KEY_ENCRYPTION
    })
    const realVerify = argon2.verify
    const verified: string[] = []
    argon2.verify = async (digest, plain, options) => { verified.push(digest); return await realVerify(digest, plain, options) }
    t.teardown(() => { argon2.verify = realVerify })
    const hasher = (await createArgon2Hashers(config.argon2, createIdentityMetrics({ processMetrics: false }))).passwords
    const realHash = await hasher.hash('a real password')
    await hasher.verifyAgainstDummy('some password')
    t.equal(verified.length, 1, 'argon2.verify ran once')
    // PHC string: $argon2id$v=19$m=…,t=…,p=…$salt$hash (parameter order is the library's).
    const params = (digest: string) => {
      const [, alg, version, costs] = digest.split('$')
      return { alg, version, ...Object.fromEntries((costs ?? '').split(',').map((kv) => kv.split('='))) }
    }
    t.same(params(verified[0] as string), params(realHash), 'same algorithm, version and cost as real hashes')
    t.same(params(realHash), {
      alg: 'argon2id',
      version: 'v=19',
      m: String(config.argon2.memoryCost),
      t: String(config.argon2.timeCost),
      p: String(config.argon2.parallelism)
    })
  })
})
