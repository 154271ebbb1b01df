import t, { type Test } from 'tap'
import { http, type HttpAnswer } from '../helpers/http.js'
import { assertProblem, assertStatus } from '../helpers/assert.js'
import { ADA, startWithUser } from '../helpers/session-setup.js'

/**
 * Login throttling: repeated failures for one e-mail or from one IP get 429
 * login_throttled with Retry-After, even with the right password, until the window
 * ends; it can be turned off.
 */

const WINDOW_SECONDS = 900

/** A 429 login_throttled with a Retry-After of whole seconds; returns those seconds. */
function assertThrottled (t: Test, answer: HttpAnswer): number {
  assertProblem(t, answer, 429, 'login_throttled')
  const retryAfter = answer.headers['retry-after'] ?? ''
  t.match(retryAfter, /^[1-9]\d*$/, 'Retry-After is a positive integer number of seconds')
  const seconds = Number(retryAfter)
  t.ok(seconds <= WINDOW_SECONDS, 'no longer than the window')
  t.same(answer.body, {
    type: 'urn:portier:problem:login_throttled',
    title: 'Too many failed logins',
    status: 429,
    detail: `Too many failed logins; retry after ${seconds} seconds.`,
    code: 'login_throttled'
  })
  return seconds
}

async function startWithUsers (t: Test, env: Record<string, string>) {
  const s = await startWithUser(t, { env: { IDENTITY_LOGIN_THROTTLE_WINDOW_SECONDS: String(WINDOW_SECONDS), ...env } })
  t.equal((await s.admin('POST', '/admin/users', { email: 'bob@example.com', password: 'bob has a long password', roles: [] })).status, 201)
  const login = async (email: string, password: string, headers: Record<string, string> = {}) => await s.loginAs({ email, password }, headers)
  const sessionCount = async () => (await s.sessions()).length
  return { ...s, login, sessionCount }
}

t.test('per e-mail (IDENTITY_LOGIN_MAX_FAILURES_PER_EMAIL=3)', async (t) => {
  const env = { IDENTITY_LOGIN_MAX_FAILURES_PER_EMAIL: '3', IDENTITY_LOGIN_MAX_FAILURES_PER_IP: '100' }

  t.test('error: the 4th attempt is 429 even with the right password; after the window login works', async (t) => {
    const { login, clock, sessionCount } = await startWithUsers(t, env)
    for (let i = 1; i <= 3; i++) {
      const answer = await login(ADA.email, `wrong password ${i}`)
      assertProblem(t, answer, 401, 'invalid_credentials')
      t.notOk('retry-after' in answer.headers, 'failures below the limit are plain 401s')
    }
    const fourth = await login(ADA.email, ADA.password)
    t.equal(assertThrottled(t, fourth), WINDOW_SECONDS, 'the whole window remains (fake clock)')
    t.equal(await sessionCount(), 0, 'no session was opened')

    clock.advance(300_000)
    t.equal(assertThrottled(t, await login(ADA.email, ADA.password)), WINDOW_SECONDS - 300, 'Retry-After counts down')
    clock.advance((WINDOW_SECONDS - 300 - 1) * 1000)
    t.equal(assertThrottled(t, await login(ADA.email, ADA.password)), 1, 'one second before the end')
    clock.advance(1_000)
    const after = await login(ADA.email, ADA.password)
    assertStatus(t, after, 201)
    t.equal(await sessionCount(), 1)
  })

  t.test('error: the e-mail is throttled whatever its case or surrounding spaces', async (t) => {
    const { login } = await startWithUsers(t, env)
    for (const email of ['ada@example.com', 'ADA@example.com', ' Ada@Example.com ']) {
      assertProblem(t, await login(email, 'wrong password'), 401, 'invalid_credentials')
    }
    assertThrottled(t, await login('aDa@EXAMPLE.com', ADA.password))
  })

  t.test('happy: another e-mail from the same IP is not throttled by it', async (t) => {
    const { login } = await startWithUsers(t, env)
    for (let i = 0; i < 3; i++) await login(ADA.email, 'wrong password')
    assertThrottled(t, await login(ADA.email, ADA.password))
    t.equal((await login('bob@example.com', 'bob has a long password')).status, 201)
  })

  t.test('happy: a successful login clears the e-mail\'s failures', async (t) => {
    const { login } = await startWithUsers(t, env)
    for (let round = 0; round < 3; round++) {
      for (let i = 0; i < 2; i++) assertProblem(t, await login(ADA.email, 'wrong password'), 401, 'invalid_credentials')
      t.equal((await login(ADA.email, ADA.password)).status, 201, `round ${round}`)
    }
  })

  t.test('security: an unknown e-mail is throttled exactly like a known one (no enumeration)', async (t) => {
    const { login } = await startWithUsers(t, env)
    const known: HttpAnswer[] = []
    const unknown: HttpAnswer[] = []
    for (let i = 0; i < 4; i++) {
      known.push(await login(ADA.email, 'wrong password'))
      unknown.push(await login('nobody@example.com', 'wrong password'))
    }
    t.same(known.map((a) => a.status), [401, 401, 401, 429])
    t.same(unknown.map((a) => a.status), [401, 401, 401, 429])
    t.same(unknown[3]?.body, known[3]?.body)
    t.equal(unknown[3]?.headers['retry-after'], known[3]?.headers['retry-after'])
  })
})

t.test('per IP (IDENTITY_LOGIN_MAX_FAILURES_PER_IP=3)', async (t) => {
  const env = { IDENTITY_LOGIN_MAX_FAILURES_PER_EMAIL: '100', IDENTITY_LOGIN_MAX_FAILURES_PER_IP: '3' }

  t.test('error: failures on different e-mails add up; the 4th attempt is 429; after the window login works', async (t) => {
    const { login, clock, sessionCount } = await startWithUsers(t, env)
    for (const email of ['one@example.com', 'two@example.com', 'bob@example.com']) {
      assertProblem(t, await login(email, 'wrong password'), 401, 'invalid_credentials')
    }
    t.equal(assertThrottled(t, await login(ADA.email, ADA.password)), WINDOW_SECONDS)
    t.equal(await sessionCount(), 0)
    clock.advance(WINDOW_SECONDS * 1000)
    t.equal((await login(ADA.email, ADA.password)).status, 201)
  })

  t.test('security: a success does not clear the IP count (one IP may try many accounts)', async (t) => {
    const { login } = await startWithUsers(t, env)
    assertProblem(t, await login('one@example.com', 'wrong password'), 401, 'invalid_credentials')
    assertProblem(t, await login('two@example.com', 'wrong password'), 401, 'invalid_credentials')
    t.equal((await login(ADA.email, ADA.password)).status, 201)
    assertProblem(t, await login('three@example.com', 'wrong password'), 401, 'invalid_credentials')
    assertThrottled(t, await login('bob@example.com', 'bob has a long password'))
  })

  t.test('security: X-Forwarded-For cannot dodge the IP limit when no proxy is trusted', async (t) => {
    const { login } = await startWithUsers(t, env)
    for (let i = 1; i <= 3; i++) {
      assertProblem(t, await login(`user${i}@example.com`, 'wrong password', { 'x-forwarded-for': `198.51.100.${i}` }), 401, 'invalid_credentials')
    }
    assertThrottled(t, await login(ADA.email, ADA.password, { 'x-forwarded-for': '198.51.100.99' }))
  })
})

/** identity's argon2 password and dummy verifications so far: the work a login attempt costs. */
async function passwordChecks (s: { adminUrl: string, serviceToken: string }): Promise<number> {
  const answer = await http(`${s.adminUrl}/metrics`, { bearer: s.serviceToken, headers: { accept: 'text/plain' } })
  return [...answer.text.matchAll(/^portier_identity_argon2_operations_total\{operation="verify",purpose="(?:password|dummy)"\} (\d+)$/gm)]
    .reduce((sum, m) => sum + Number(m[1]), 0)
}

t.test('security: concurrent attempts count before their password is checked', async (t) => {
  const env = { IDENTITY_LOGIN_MAX_FAILURES_PER_EMAIL: '3', IDENTITY_LOGIN_MAX_FAILURES_PER_IP: '6' }

  t.test('30 at once for one e-mail: 3 password checks, 3 × 401 and 27 × 429', async (t) => {
    const s = await startWithUsers(t, env)
    const before = await passwordChecks(s)
    const answers = await Promise.all(Array.from({ length: 30 }, async (_, i) => await s.login(ADA.email, `wrong password ${i}`)))
    t.equal(await passwordChecks(s) - before, 3, 'at most the limit of argon2 verifications')
    t.equal(answers.filter((a) => a.status === 401).length, 3, 'three failures')
    const throttled = answers.filter((a) => a.status === 429)
    t.equal(throttled.length, 27, 'the rest throttled')
    for (const answer of throttled.slice(0, 3)) assertThrottled(t, answer)
  })

  t.test('30 at once from one IP on 30 e-mails: 6 checks (the IP limit)', async (t) => {
    const s = await startWithUsers(t, env)
    const before = await passwordChecks(s)
    const answers = await Promise.all(Array.from({ length: 30 }, async (_, i) => await s.login(`user${i}@example.com`, 'wrong password')))
    t.equal(await passwordChecks(s) - before, 6, 'the IP limit bounds the argon2 verifications')
    t.same([answers.filter((a) => a.status === 401).length, answers.filter((a) => a.status === 429).length], [6, 24])
  })

  t.test('20 right passwords at once for one e-mail: all log in (checks beyond the limit wait, none is refused)', async (t) => {
    const s = await startWithUsers(t, env)
    const answers = await Promise.all(Array.from({ length: 20 }, async () => await s.login(ADA.email, ADA.password)))
    t.same(answers.map((a) => a.status), Array(20).fill(201))
    t.equal(await s.sessionCount(), 20)
  })

  t.test('right and wrong passwords at once: every right one logs in until the wrong ones reach the limit', async (t) => {
    const s = await startWithUsers(t, env)
    const answers = await Promise.all([
      s.login(ADA.email, ADA.password), s.login(ADA.email, 'wrong password'), s.login(ADA.email, ADA.password), s.login(ADA.email, 'wrong password')
    ])
    t.same(answers.map((a) => a.status), [201, 401, 201, 401])
    // The successes cleared the e-mail's failures as they ended; at most the two wrong ones remain.
    assertProblem(t, await s.login(ADA.email, 'wrong password'), 401, 'invalid_credentials')
  })
})

t.test('IDENTITY_LOGIN_THROTTLE_ENABLED=false turns throttling off', async (t) => {
  const { login } = await startWithUsers(t, {
    IDENTITY_LOGIN_THROTTLE_ENABLED: 'false', IDENTITY_LOGIN_MAX_FAILURES_PER_EMAIL: '3', IDENTITY_LOGIN_MAX_FAILURES_PER_IP: '3'
  })
  for (let i = 0; i < 8; i++) {
    const answer = await login(i % 2 === 0 ? ADA.email : `other${i}@example.com`, 'wrong password')
    assertProblem(t, answer, 401, 'invalid_credentials')
  }
  const answer = await login(ADA.email, ADA.password)
  assertStatus(t, answer, 201)
})

t.test('throttling is on by default (5 failures per e-mail)', async (t) => {
  const { login } = await startWithUsers(t, {})
  for (let i = 0; i < 5; i++) assertProblem(t, await login(ADA.email, 'wrong password'), 401, 'invalid_credentials')
  assertThrottled(t, await login(ADA.email, ADA.password))
})
