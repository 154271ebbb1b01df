import t, { type Test } from 'tap'
import { assertProblem } from '../helpers/assert.js'
import { DEMO_STARTED, demoEnvironment } from '../helpers/demo.js'
import { http, type HttpAnswer } from '../helpers/http.js'
import { watchForLeaks } from '../helpers/leak-watch.js'
import { startProcess } from '../helpers/process.js'
import { startProcessStack, type ProcessStack } from '../helpers/process-stack.js'

/**
 * Login throttling against concurrency and shared addresses, through real gateway and
 * identity processes. An attempt counts before its password is checked, so N
 * concurrent attempts run at most the limit's worth of argon2 verifications and the
 * rest get 429 with Retry-After (per e-mail, per IP, per IPv6 /64, and for one e-mail
 * from many IPs), while as many concurrent right passwords all log in.
 * With identity trusting the gateway as `npm start` and the deployments set it up,
 * each client has its own IP bucket: bad logins from many clients lock nobody else
 * out. Without that trust, identity warns that it sees the gateway as every client.
 */

/** Defaults: IDENTITY_LOGIN_MAX_FAILURES_PER_EMAIL and …_PER_IP. */
const PER_EMAIL = 5
const PER_IP = 20
const WINDOW_SECONDS = 900
const BOB = { email: 'bob@example.com', password: 'bob has a long password' }

/** identity's argon2 verifications for logins so far (a user's hash, or the dummy one for an unknown e-mail). */
async function passwordChecks (stack: ProcessStack): Promise<number> {
  const answer = await stack.identity.admin('GET', '/metrics')
  return [...answer.text.matchAll(/^portier_identity_argon2_operations_total\{operation="verify",purpose="(?:password|dummy)"\} (\d+)$/gm)]
    .reduce((sum, m) => sum + Number(m[1]), 0)
}

/** POST /sessions through the gateway, as the client `ip` (named by the load balancer the gateway trusts). */
async function login (stack: ProcessStack, credentials: { email: string, password: string }, ip: string): Promise<HttpAnswer> {
  return await stack.call('/sessions', { body: { session: credentials }, headers: { 'x-forwarded-for': ip } })
}

/** Runs `attempts` at once; asserts at most `limit` password checks and a 429 with Retry-After for every other answer. */
async function burst (t: Test, stack: ProcessStack, attempts: Array<() => Promise<HttpAnswer>>, limit: number): Promise<HttpAnswer[]> {
  const before = await passwordChecks(stack)
  const answers = await Promise.all(attempts.map(async (attempt) => await attempt()))
  const checks = await passwordChecks(stack) - before
  t.ok(checks <= limit, `${attempts.length} concurrent attempts: ${checks} password checks, at most ${limit}`)
  const failed = answers.filter((a) => a.status === 401)
  const throttled = answers.filter((a) => a.status === 429)
  t.equal(failed.length + throttled.length, attempts.length, 'every answer is a 401 or a 429')
  t.equal(failed.length, checks, 'each 401 is one check; no 429 ran one')
  for (const answer of failed) assertProblem(t, answer, 401, 'invalid_credentials')
  const retryAfter = throttled.map((a) => Number(a.headers['retry-after']))
  t.ok(retryAfter.every((s) => Number.isInteger(s) && s >= 1 && s <= WINDOW_SECONDS), 'every 429 carries Retry-After within the window')
  if (throttled[0] !== undefined) assertProblem(t, throttled[0], 429, 'login_throttled')
  return answers
}

t.test('identity trusting the gateway (npm start: loopback; compose and Kubernetes: the gateways)', async (t) => {
  const leaks = watchForLeaks()
  const stack = await startProcessStack(t, {
    leaks,
    identityEnv: { IDENTITY_TRUST_PROXY: 'loopback' },
    // The test client plays the load balancer in front of the gateway: its X-Forwarded-For names the client.
    gatewayEnv: { GATEWAY_TRUST_PROXY: 'loopback' }
  })
  leaks.secret(BOB.password)
  t.equal((await stack.identity.admin('POST', '/admin/users', { ...BOB, roles: ['reader'] })).status, 201, 'a second user')

  await t.test('30 concurrent wrong passwords for one e-mail from one IP: at most 5 checks, the rest 429', async (t) => {
    const attempts = Array.from({ length: 30 }, (_, i) => async () => await login(stack, { email: stack.user.email, password: `wrong password ${i}` }, '203.0.113.10'))
    const answers = await burst(t, stack, attempts, PER_EMAIL)
    t.ok(answers.filter((a) => a.status === 429).length >= 30 - PER_EMAIL, 'at least 25 refused before any check')
    assertProblem(t, await login(stack, stack.user, '203.0.113.11'), 429, 'login_throttled', 'the locked e-mail, right password, another IP: still 429')
    t.equal((await login(stack, BOB, '203.0.113.10')).status, 201, 'another user logs in meanwhile, from the same IP')
  })

  await t.test('30 concurrent right passwords for one user from one IP: all log in, none throttled', async (t) => {
    const answers = await Promise.all(Array.from({ length: 30 }, async () => await login(stack, BOB, '203.0.113.30')))
    t.same(answers.map((a) => a.status), Array(30).fill(201), 'running checks beyond the limit wait; right passwords are never refused')
  })

  await t.test('40 concurrent attempts on 40 e-mails from one IP: at most 20 checks (the IP limit)', async (t) => {
    const attempts = Array.from({ length: 40 }, (_, i) => async () => await login(stack, { email: `user${i}@example.com`, password: 'wrong password' }, '203.0.113.20'))
    await burst(t, stack, attempts, PER_IP)
    assertProblem(t, await login(stack, BOB, '203.0.113.20'), 429, 'login_throttled', 'that IP is throttled for everyone')
  })

  await t.test('30 concurrent attempts on one e-mail from 30 IPs: at most 5 checks (the e-mail limit)', async (t) => {
    const attempts = Array.from({ length: 30 }, (_, i) => async () => await login(stack, { email: 'carol@example.com', password: `guess ${i}` }, `198.51.100.${i + 1}`))
    await burst(t, stack, attempts, PER_EMAIL)
  })

  await t.test('40 concurrent attempts on 40 e-mails from 40 addresses of one IPv6 /64: at most 20 checks', async (t) => {
    const attempts = Array.from({ length: 40 }, (_, i) => async () =>
      await login(stack, { email: `v6user${i}@example.com`, password: 'wrong password' }, `2001:db8:aa:bb::${(i + 1).toString(16)}`))
    await burst(t, stack, attempts, PER_IP)
    t.equal((await login(stack, BOB, '2001:db8:aa:bc::1')).status, 201, 'the next /64 is another client')
  })

  await t.test('25 bad logins from 25 clients do not lock out a login from another client', async (t) => {
    const answers = await Promise.all(Array.from({ length: 25 }, async (_, i) =>
      await login(stack, { email: `someone${i}@example.com`, password: 'wrong password' }, `192.0.2.${i + 1}`)))
    t.same(answers.map((a) => a.status), Array(25).fill(401), 'each client failed once: 401, no client throttled')
    t.equal((await login(stack, BOB, '192.0.2.200')).status, 201, 'another client logs in')
    t.notMatch(stack.identity.output(), /which identity does not use/, 'identity uses the forwarded address: no warning')
  })

  await leaks.assertNoLeaks(t)
})

t.test('identity without IDENTITY_TRUST_PROXY behind a gateway: it warns, naming the variable', async (t) => {
  const leaks = watchForLeaks()
  const stack = await startProcessStack(t, { leaks, gatewayEnv: { GATEWAY_TRUST_PROXY: 'loopback' } })
  leaks.secret(BOB.password)
  t.equal((await stack.identity.admin('POST', '/admin/users', { ...BOB, roles: ['reader'] })).status, 201)
  const answers = []
  for (let i = 0; i < PER_IP; i++) answers.push(await login(stack, { email: `someone${i}@example.com`, password: 'wrong password' }, `192.0.2.${i + 1}`))
  t.same(answers.map((a) => a.status), Array(PER_IP).fill(401))
  // What the warning is about: every client is the gateway, so 20 failures by anyone refuse everyone.
  assertProblem(t, await login(stack, BOB, '192.0.2.200'), 429, 'login_throttled', 'another client is locked out: one bucket for all')
  const warnings = stack.identity.output().split('\n').filter((line) => line.includes('which identity does not use'))
  t.equal(warnings.length, 1, 'one warning for the gateway\'s address, not one per request')
  t.match(warnings[0], /"peer":"127\.0\.0\.1"/)
  t.match(warnings[0], /IDENTITY_TRUST_PROXY is unset/)
  t.match(warnings[0], /add it to IDENTITY_TRUST_PROXY/)
  await leaks.assertNoLeaks(t)
})

t.test('npm start: identity trusts its in-process gateway, so bad logins from many clients lock nobody else out', async (t) => {
  // A load balancer on this machine in front of npm start's gateway names each client.
  const demo = await demoEnvironment(t, { GATEWAY_TRUST_PROXY: 'loopback' })
  const running = startProcess(t, 'dist/demo/start.js', demo.env, DEMO_STARTED)
  t.ok(await running.ready, 'npm start prints its banner', { stderr: running.stderr().slice(-2000) })
  const password = /admin@example\.com {3}password (\S+)/.exec(running.stdout())?.[1] as string
  const as = async (body: unknown, ip: string): Promise<HttpAnswer> =>
    await http(`${demo.gateway}/sessions`, { body, headers: { 'x-forwarded-for': ip } })
  const answers = await Promise.all(Array.from({ length: PER_IP + 5 }, async (_, i) =>
    await as({ session: { email: `someone${i}@example.com`, password: 'wrong password' } }, `192.0.2.${i + 1}`)))
  t.same(answers.map((a) => a.status), Array(PER_IP + 5).fill(401), `${PER_IP + 5} clients failed once each: 401, none throttled`)
  t.equal((await as({ session: { email: 'admin@example.com', password } }, '192.0.2.200')).status, 201, 'the demo admin logs in from another client')
  t.notMatch(running.stdout(), /which identity does not use/, 'identity uses the gateway\'s X-Forwarded-For: no warning')
  running.child.kill('SIGINT')
  t.equal((await running.exited).code, 0)
})
