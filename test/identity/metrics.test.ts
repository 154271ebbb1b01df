import t, { type Test } from 'tap'
import { formatApiKey, generateApiKey, parseApiKey } from '../../common/api-key-format.js'
import { randomBase62 } from '../../common/random.js'
import { assertProblem, assertStatus } from '../helpers/assert.js'
import { http, type HttpAnswer } from '../helpers/http.js'
import { startIdentity, type TestIdentity } from '../helpers/identity.js'
import { ADA, keyHelpers, startWithUser } from '../helpers/session-setup.js'

/**
 * Identity's GET /metrics: on the admin listener only, for the admin or the service
 * credential; and its counters (argon2 runs by purpose, key verifications by result,
 * logins and refreshes by outcome) move by exactly what each request did.
 */

/** What Prometheus sends: no JSON in it, yet /metrics answers (it opts out of the Accept check). */
const PROMETHEUS_ACCEPT = 'application/openmetrics-text;version=1.0.0;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1'

const IDENTITY_COUNTERS = [
  'portier_identity_argon2_operations_total',
  'portier_identity_key_verifications_total',
  'portier_identity_key_secret_checks_total',
  'portier_identity_key_hash_upgrades_total',
  'portier_identity_logins_total',
  'portier_identity_refreshes_total'
]

/** A series as `name{k="v",…}` with its labels sorted, whatever order the exposition used. */
function series (name: string, labels: Record<string, string>): string {
  return `${name}{${Object.entries(labels).sort(([a], [b]) => a.localeCompare(b)).map(([k, v]) => `${k}="${v}"`).join(',')}}`
}

const argon2 = (operation: 'hash' | 'verify', purpose: 'password' | 'api_key' | 'dummy'): string =>
  series('portier_identity_argon2_operations_total', { operation, purpose })
const keyVerification = (result: string): string => series('portier_identity_key_verifications_total', { result })
const secretCheck = (scheme: 'sha256' | 'argon2id'): string => series('portier_identity_key_secret_checks_total', { scheme })
const login = (outcome: string): string => series('portier_identity_logins_total', { outcome })
const refresh = (outcome: string): string => series('portier_identity_refreshes_total', { outcome })

/** identity's own counters, series by series, from one scrape with the service credential. */
async function scrape (t: Test, identity: Pick<TestIdentity, 'adminUrl' | 'serviceToken'>): Promise<Map<string, number>> {
  const answer = await http(`${identity.adminUrl}/metrics`, { bearer: identity.serviceToken, headers: { accept: PROMETHEUS_ACCEPT } })
  assertStatus(t, answer, 200, 'scrape')
  const values = new Map<string, number>()
  for (const line of answer.text.split('\n')) {
    const match = /^(\w+)\{([^}]*)\} (\S+)$/.exec(line)
    if (match === null || !IDENTITY_COUNTERS.includes(match[1] as string)) continue
    const labels = Object.fromEntries([...(match[2] as string).matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]))
    values.set(series(match[1] as string, labels), Number(match[3]))
  }
  return values
}

/** Runs `action` and asserts that identity's counters moved by exactly `expected` (every other series by 0). */
async function assertCounts (t: Test, identity: Pick<TestIdentity, 'adminUrl' | 'serviceToken'>, label: string,
  action: () => Promise<unknown>, expected: Record<string, number>): Promise<void> {
  const before = await scrape(t, identity)
  await action()
  const after = await scrape(t, identity)
  const moved: Record<string, number> = {}
  for (const [name, value] of after) {
    const delta = value - (before.get(name) ?? 0)
    if (delta !== 0) moved[name] = delta
  }
  t.same(moved, expected, label)
}

t.test('security: /metrics is on the admin listener only, for the admin or the service credential', async (t) => {
  const identity = await startIdentity(t)
  const { adminUrl, publicUrl, adminToken, serviceToken } = identity

  const refused: Array<[label: string, authorization: string | undefined]> = [
    ['no credential', undefined],
    ['a wrong token', `Bearer ${'0'.repeat(adminToken.length)}`],
    ['the service token under another scheme', `Basic ${serviceToken}`],
    ['the admin token with one character more', `Bearer ${adminToken}0`]
  ]
  for (const [label, authorization] of refused) {
    const answer = await http(`${adminUrl}/metrics`, { headers: { accept: PROMETHEUS_ACCEPT, ...(authorization !== undefined ? { authorization } : {}) } })
    assertProblem(t, answer, 401, 'admin_unauthorized', `/metrics with ${label}`)
    t.match(answer.headers['www-authenticate'], /^Bearer realm="portier"/, `/metrics with ${label}: 401 names the scheme`)
    t.notOk(answer.text.includes('portier_identity_'), `/metrics with ${label}: no metric leaks`)
  }

  for (const [label, token] of [['the admin token', adminToken], ['the service token', serviceToken]] as const) {
    const answer = await http(`${adminUrl}/metrics`, { bearer: token, headers: { accept: PROMETHEUS_ACCEPT } })
    assertStatus(t, answer, 200, `/metrics with ${label}`)
    t.match(answer.headers['content-type'], /^text\/plain; version=0\.0\.4/, `${label}: Prometheus text format`)
    t.equal(answer.headers['cache-control'], 'no-store', `${label}: not cached`)
    t.match(answer.text, /^process_cpu_seconds_total \d/m, `${label}: identity's CPU seconds, under the standard name`)
    t.match(answer.text, /^portier_build_info\{[^}]*service="identity"\} 1$/m, `${label}: the build info`)
    t.match(answer.text, /^# TYPE portier_identity_argon2_operations_total counter$/m, `${label}: the argon2 counter`)
    t.notOk(answer.text.includes(adminToken) || answer.text.includes(serviceToken), `${label}: no credential in the metrics`)
  }
  assertStatus(t, await http(`${adminUrl}/metrics`, { bearer: serviceToken, headers: { accept: 'application/json' } }), 200,
    'an Accept of JSON only is served too (the route is not JSON)')

  // The exception is /metrics exactly: the service token opens nothing else outside /internal.
  assertProblem(t, await http(`${adminUrl}/admin/users`, { bearer: serviceToken }), 401, 'admin_unauthorized', '/admin/users with the service token')
  assertProblem(t, await http(`${adminUrl}/metrics/x`, { bearer: serviceToken }), 401, 'admin_unauthorized', '/metrics/x with the service token')
  assertProblem(t, await http(`${adminUrl}/internal/sessions/revoked`, { bearer: adminToken }), 401, 'service_unauthorized',
    '/internal still refuses the admin token')

  for (const [label, token] of [['no credential', undefined], ['the admin token', adminToken], ['the service token', serviceToken]] as const) {
    const answer: HttpAnswer = await http(`${publicUrl}/metrics`, { ...(token !== undefined ? { bearer: token } : {}), headers: { accept: PROMETHEUS_ACCEPT } })
    assertProblem(t, answer, 404, 'not_found', `public listener /metrics with ${label}`)
  }
})

t.test('counters: every argon2 run by purpose, every verification by result, logins and refreshes by outcome', async (t) => {
  const s = await startWithUser(t)
  const keys = keyHelpers(t, s)

  t.equal((await scrape(t, s)).get(argon2('hash', 'dummy')), 1, 'start: the dummy hash, made once')

  await assertCounts(t, s, 'a wrong password: one password verification, a failed login',
    async () => { assertProblem(t, await s.loginAs({ email: ADA.email, password: 'wrong password' }), 401, 'invalid_credentials') },
    { [argon2('verify', 'password')]: 1, [login('failure')]: 1 })

  await assertCounts(t, s, 'an unknown e-mail: one dummy verification, a failed login',
    async () => { assertProblem(t, await s.loginAs({ email: 'nobody@example.com', password: 'some password' }), 401, 'invalid_credentials') },
    { [argon2('verify', 'dummy')]: 1, [login('failure')]: 1 })

  let tokens = await s.login()
  await assertCounts(t, s, 'a good login: one password verification, a successful login',
    async () => { tokens = await s.login() },
    { [argon2('verify', 'password')]: 1, [login('success')]: 1 })

  await assertCounts(t, s, 'a refresh: no argon2, a successful refresh', async () => {
    const answer = await s.refresh(tokens)
    assertStatus(t, answer, 200, 'refresh')
  }, { [refresh('success')]: 1 })

  await assertCounts(t, s, 'a spent refresh token: a failed refresh', async () => {
    assertProblem(t, await s.refresh(tokens), 401, 'refresh_token_reused')
  }, { [refresh('failure')]: 1 })

  let created = { id: '', key: '' }
  await assertCounts(t, s, 'a key creation: no argon2 (key secrets are SHA-256)', async () => {
    created = await keys.create({ name: 'metrics', permissions: ['users:list'], expires_at: '2999-01-01T00:00:00Z' })
  }, {})

  await assertCounts(t, s, 'a valid key: one SHA-256 check, no argon2',
    async () => { t.match(await keys.verify(created.key), { valid: true }) },
    { [secretCheck('sha256')]: 1, [keyVerification('valid')]: 1 })

  const { lookupId } = parseApiKey(created.key) ?? { lookupId: '' }
  await assertCounts(t, s, 'a wrong secret: one SHA-256 check, answered as unknown, counted as wrong_secret',
    async () => { t.same(await keys.verify(formatApiKey(lookupId, randomBase62(43))), { valid: false, reason: 'unknown' }) },
    { [secretCheck('sha256')]: 1, [keyVerification('wrong_secret')]: 1 })

  await assertCounts(t, s, 'an unknown lookup id: no check counted, no argon2',
    async () => { t.same(await keys.verify(generateApiKey().key), { valid: false, reason: 'unknown' }) },
    { [keyVerification('unknown')]: 1 })

  await assertCounts(t, s, 'a malformed key: no argon2 at all',
    async () => { t.same(await keys.verify('ptk_hello'), { valid: false, reason: 'malformed' }) },
    { [keyVerification('malformed')]: 1 })

  await assertCounts(t, s, 'a revoked key: its secret checked (SHA-256) before its state is told, no argon2', async () => {
    assertStatus(t, await s.admin('POST', `/admin/keys/${created.id}/revoke`), 200, 'revoke')
    t.same(await keys.verify(created.key), { valid: false, reason: 'revoked' })
  }, { [secretCheck('sha256')]: 1, [keyVerification('revoked')]: 1 })

  await assertCounts(t, s, 'a password change: one password hash', async () => {
    assertStatus(t, await s.admin('PUT', `/admin/users/${s.userId}/password`, { password: 'another good password' }), 200, 'password changed')
  }, { [argon2('hash', 'password')]: 1 })

  const text = (await http(`${s.adminUrl}/metrics`, { bearer: s.serviceToken })).text
  t.notOk(text.includes(ADA.email) || text.includes(created.id) || text.includes(lookupId), 'no e-mail, key id or lookup id in the metrics')
})

t.test('counters: a throttled login does no argon2 work', async (t) => {
  const s = await startWithUser(t, { env: { IDENTITY_LOGIN_MAX_FAILURES_PER_EMAIL: '1' } })
  await assertCounts(t, s, 'the failure that reaches the limit',
    async () => { assertProblem(t, await s.loginAs({ email: ADA.email, password: 'wrong password' }), 401, 'invalid_credentials') },
    { [argon2('verify', 'password')]: 1, [login('failure')]: 1 })
  await assertCounts(t, s, 'the next attempt: throttled, no argon2',
    async () => { assertProblem(t, await s.loginAs(ADA), 429, 'login_throttled') },
    { [login('throttled')]: 1 })
})

t.test('two identities in one process count apart', async (t) => {
  const first = await startIdentity(t)
  const second = await startIdentity(t)
  assertProblem(t, await http(`${first.publicUrl}/sessions`, { body: { session: { email: 'nobody@example.com', password: 'x'.repeat(12) } } }),
    401, 'invalid_credentials')
  t.equal((await scrape(t, first)).get(login('failure')), 1, 'the first counted its login')
  t.equal((await scrape(t, second)).get(login('failure')), undefined, 'the second did not')
  t.equal((await scrape(t, second)).get(argon2('hash', 'dummy')), 1, 'each has made its own dummy hash, once')
})
