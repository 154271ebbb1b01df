import t, { type Test } from 'tap'
import { randomUUID } from 'node:crypto'
import type { TestIdentity } from '../helpers/identity.js'
import { http, type HttpAnswer, type HttpRequest } from '../helpers/http.js'
import { generateApiKey } from '../../common/api-key-format.js'
import { ADA, startWithUser } from '../helpers/session-setup.js'

/**
 * Logging on the public listener: exactly one pino line per request (msg "request",
 * with method, path and status), and no secret anywhere in the log text — not the
 * password, tokens, admin or service credential, nor an argon2 hash.
 */

const WRONG_PASSWORD = 'wrong-password-Zq81-never-log-me'
const API_KEY = generateApiKey().key
const COOKIE = 'session=c00kie-Zq81-never-log-me'

type LogLine = Record<string, unknown>

/**
 * Waits (on the event loop, not the wall clock) until `predicate` holds: a request's
 * log line is written in onResponse, which may run just after the client read the answer.
 */
async function until (predicate: () => boolean): Promise<boolean> {
  for (let i = 0; i < 10_000 && !predicate(); i++) await new Promise((resolve) => setImmediate(resolve))
  return predicate()
}

function linesOf (identity: TestIdentity, requestId: string): LogLine[] {
  return identity.logs.filter((line) => line.request_id === requestId)
}

async function startWithCalls (t: Test) {
  const identity = await startWithUser(t)
  /** A public request tagged with its own x-request-id, so its log lines can be found. */
  const call = async (path: string, request: HttpRequest = {}): Promise<{ answer: HttpAnswer, requestId: string }> => {
    const requestId = randomUUID()
    const answer = await http(`${identity.publicUrl}${path}`, { ...request, headers: { ...request.headers, 'x-request-id': requestId } })
    t.equal(answer.headers['x-request-id'], requestId, 'the request id is echoed')
    return { answer, requestId }
  }
  return { ...identity, call }
}

t.test('one log line per request, and no secret in any log line', async (t) => {
  const identity = await startWithCalls(t)
  const { call } = identity

  const login = await call('/sessions', { body: { session: ADA } })
  t.equal(login.answer.status, 201)
  const tokens = login.answer.body as { access_token: string, refresh_token: string }
  const refresh = await call('/tokens', { bearer: tokens.access_token, body: { refresh_token: tokens.refresh_token } })
  t.equal(refresh.answer.status, 200)
  const refreshed = refresh.answer.body as { access_token: string, refresh_token: string }
  const jetons = await call('/jetons', { bearer: refreshed.access_token, body: { refresh_token: refreshed.refresh_token } })
  t.equal(jetons.answer.status, 200)
  const latest = jetons.answer.body as { access_token: string, refresh_token: string }
  const logout = await call('/sessions/current', { method: 'DELETE', bearer: latest.access_token })
  t.equal(logout.answer.status, 204)
  const failed = await call('/sessions', { body: { session: { email: ADA.email, password: WRONG_PASSWORD } } })
  t.equal(failed.answer.status, 401)
  const unknownUser = await call('/sessions', { body: { session: { email: 'nobody@example.com', password: WRONG_PASSWORD } } })
  t.equal(unknownUser.answer.status, 401)
  const malformed = await call('/sessions', { body: `{"session":{"email":"${ADA.email}","password":"${WRONG_PASSWORD}"` })
  t.equal(malformed.answer.status, 400)
  const reuse = await call('/tokens', { bearer: latest.access_token, body: { refresh_token: tokens.refresh_token } })
  t.equal(reuse.answer.status, 401)
  const secretInQuery = await call(`/sessions?password=${encodeURIComponent(WRONG_PASSWORD)}`, { body: { session: ADA } })
  t.equal(secretInQuery.answer.status, 201)
  const jwks = await call('/.well-known/jwks.json')
  t.equal(jwks.answer.status, 200)
  const withKey = await call('/.well-known/jwks.json', { headers: { 'x-api-key': API_KEY, cookie: COOKIE }, bearer: latest.access_token })
  t.equal(withKey.answer.status, 200)

  const expected: Array<[name: string, requestId: string, method: string, url: string, status: number, principal: { type: string, id: string | null }]> = [
    ['login', login.requestId, 'POST', '/sessions', 201, { type: 'user', id: identity.userId }],
    ['refresh', refresh.requestId, 'POST', '/tokens', 200, { type: 'user', id: identity.userId }],
    ['refresh (jetons)', jetons.requestId, 'POST', '/jetons', 200, { type: 'user', id: identity.userId }],
    ['logout', logout.requestId, 'DELETE', '/sessions/current', 204, { type: 'user', id: identity.userId }],
    ['failed login', failed.requestId, 'POST', '/sessions', 401, { type: 'anonymous', id: null }],
    ['unknown e-mail', unknownUser.requestId, 'POST', '/sessions', 401, { type: 'anonymous', id: null }],
    ['malformed body', malformed.requestId, 'POST', '/sessions', 400, { type: 'anonymous', id: null }],
    ['refresh token reuse', reuse.requestId, 'POST', '/tokens', 401, { type: 'anonymous', id: null }],
    ['login with a secret in the query string', secretInQuery.requestId, 'POST', '/sessions', 201, { type: 'user', id: identity.userId }],
    ['jwks', jwks.requestId, 'GET', '/.well-known/jwks.json', 200, { type: 'anonymous', id: null }],
    ['jwks with an x-api-key, a cookie and a Bearer', withKey.requestId, 'GET', '/.well-known/jwks.json', 200, { type: 'anonymous', id: null }]
  ]
  t.ok(await until(() => expected.every(([, id]) => linesOf(identity, id).some((l) => l.msg === 'request'))), 'every request was logged')
  // One more request, logged after all the others: any duplicate line would be written by now.
  const sentinel = await call('/healthz')
  t.ok(await until(() => linesOf(identity, sentinel.requestId).length > 0))

  t.test('exactly one line per request: msg "request" with method, path (no query), status and who sent it', async (t) => {
    for (const [name, requestId, method, url, status, principal] of expected) {
      const lines = linesOf(identity, requestId)
      t.equal(lines.length, 1, `${name}: one line in all`)
      t.match(lines[0], { name: 'identity', level: 30, msg: 'request', request_id: requestId, method, url, status, duration_ms: Number }, name)
      t.same(lines[0]?.principal, principal, `${name}: the principal named`)
      t.notOk('req' in (lines[0] ?? {}) || 'headers' in (lines[0] ?? {}) || 'body' in (lines[0] ?? {}), `${name}: no headers or body logged`)
    }
  })

  t.test('no secret appears anywhere in the log text', async (t) => {
    const text = identity.logText()
    t.ok(text.length > 0, 'something was logged')
    const secrets: Array<[name: string, value: string]> = [
      ['the password', ADA.password],
      ['the wrong password', WRONG_PASSWORD],
      ['the wrong password, URL-encoded', encodeURIComponent(WRONG_PASSWORD)],
      ['the login access token', tokens.access_token],
      ['the login refresh token', tokens.refresh_token],
      ['the refreshed access token', refreshed.access_token],
      ['the refreshed refresh token', refreshed.refresh_token],
      ['the latest access token', latest.access_token],
      ['the latest refresh token', latest.refresh_token],
      ['the admin token', identity.adminToken],
      ['the service token', identity.serviceToken],
      ['an argon2 hash', '$argon2'],
      ['a stored key secret hash', 'sha256$'],
      ['the x-api-key', API_KEY],
      ['the secret part of the x-api-key', API_KEY.slice(17)],
      ['the cookie', COOKIE],
      ['a refresh token prefix with its secret', 'prt_']
    ]
    for (const [name, value] of secrets) t.notOk(text.includes(value), `not logged: ${name}`)
    // A JWT's signature alone is secret enough to look for: it must not be there either.
    for (const token of [tokens.access_token, refreshed.access_token, latest.access_token]) {
      t.notOk(text.includes(token.split('.')[2] as string), 'no access token signature')
    }
  })
})
