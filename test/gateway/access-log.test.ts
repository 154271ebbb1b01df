import t from 'tap'
import { randomUUID } from 'node:crypto'
import { Browser, csrfOf, startConsole } from '../helpers/console.js'
import { startStack, type TestGateway } from '../helpers/gateway.js'
import { captureLogs } from '../helpers/logs.js'
import { rawRequest, type RawRequest } from '../helpers/http.js'

/**
 * The access log over real sockets: one line per request, naming the route pattern that
 * matched (never the raw path), the upstream, who sent it (key or user id, never the
 * credential), the body bytes each way, and the trace id of a valid traceparent; the
 * same fields in identity's and the console's lines.
 */

type LogLine = Record<string, unknown>

const ACCESS_FIELDS = ['request_id', 'trace_id', 'method', 'url', 'route', 'upstream', 'status', 'principal',
  'bytes_in', 'bytes_out', 'duration_ms', 'remote_address'].sort()
const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736'
const TRACEPARENT = `00-${TRACE_ID}-00f067aa0ba902b7-01`

/** Waits (on the event loop) for a line: access lines are written once the answer is over. */
async function lineOf (logs: LogLine[], requestId: string): Promise<LogLine[]> {
  for (let i = 0; i < 10_000 && !logs.some((l) => l.request_id === requestId && l.msg === 'request'); i++) {
    await new Promise((resolve) => setImmediate(resolve))
  }
  return logs.filter((l) => l.request_id === requestId && l.msg === 'request')
}

const accessFieldsOf = (line: LogLine | undefined): string[] =>
  Object.keys(line ?? {}).filter((k) => !['level', 'time', 'pid', 'hostname', 'name', 'msg'].includes(k)).sort()

t.test('the gateway\'s access line', async (t) => {
  const s = await startStack(t)
  const { gateway } = s
  const key = await s.createKey(['users:read', 'users:create'])
  const tokens = await s.login()

  /** A request with its own id; its one access line, and the raw answer. */
  const send = async (g: TestGateway, path: string, request: RawRequest = {}) => {
    const requestId = randomUUID()
    const answer = await rawRequest(g.url, path, { ...request, headers: { 'x-request-id': requestId, ...request.headers } })
    const lines = await lineOf(g.logs, requestId)
    t.equal(lines.length, 1, `${request.method ?? 'GET'} ${path}: one access line`)
    return { answer, line: lines[0] as LogLine }
  }

  await t.test('a key: the route pattern, the upstream, the key id, the bytes and the trace id', async (t) => {
    const { answer, line } = await send(gateway, '/users/7?fields=all', { headers: { 'x-api-key': key.key, traceparent: TRACEPARENT } })
    t.equal(answer.status, 200)
    t.same(accessFieldsOf(line), ACCESS_FIELDS, 'exactly the access fields')
    t.match(line, {
      msg: 'request',
      method: 'GET',
      url: '/users/7',
      route: '/users/:id',
      upstream: 'backoffice',
      status: 200,
      principal: { type: 'api_key', id: key.id },
      trace_id: TRACE_ID,
      bytes_in: 0,
      bytes_out: answer.bytes.length,
      duration_ms: Number,
      remote_address: '127.0.0.1'
    })
    t.ok(answer.bytes.length > 0, 'the answer had a body')
  })

  await t.test('a body in: its bytes, declared or chunked', async (t) => {
    const body = JSON.stringify({ first_name: 'Grace', last_name: 'Hopper', email: 'grace@example.com' })
    const declared = await send(gateway, '/users', { method: 'POST', body, headers: { 'x-api-key': key.key, 'content-type': 'application/json' } })
    t.equal(declared.answer.status, 201)
    t.match(declared.line, { route: '/users', method: 'POST', status: 201, bytes_in: Buffer.byteLength(body), bytes_out: declared.answer.bytes.length })
    const chunked = await send(gateway, '/users', {
      method: 'POST', body, headers: { 'x-api-key': key.key, 'content-type': 'application/json', 'transfer-encoding': 'chunked' }
    })
    t.equal(chunked.answer.status, 201)
    t.equal(chunked.line.bytes_in, Buffer.byteLength(body), 'a chunked body is counted as read')
  })

  await t.test('a bearer token: the user id', async (t) => {
    const { answer, line } = await send(gateway, '/users', { headers: { authorization: `Bearer ${tokens.access_token}` } })
    t.equal(answer.status, 200)
    t.match(line, { route: '/users', upstream: 'backoffice', principal: { type: 'user', id: s.userId }, trace_id: null, bytes_out: answer.bytes.length })
  })

  await t.test('refusals: who asked, where they were refused, what the answer weighed', async (t) => {
    const forbidden = await send(gateway, '/users', { headers: { 'x-api-key': key.key } })
    t.equal(forbidden.answer.status, 403)
    t.match(forbidden.line, { route: '/users', status: 403, principal: { type: 'api_key', id: key.id }, bytes_out: forbidden.answer.bytes.length },
      'a verified key without the permission is still named')
    const unmatched = await send(gateway, '/nowhere/42', { headers: { traceparent: `00-${'0'.repeat(32)}-00f067aa0ba902b7-01` } })
    t.equal(unmatched.answer.status, 404)
    t.match(unmatched.line, { route: null, upstream: null, status: 404, principal: { type: 'anonymous', id: null }, trace_id: null },
      'no route, no upstream, anonymous; an all-zero trace id is not one')
    const badKey = await send(gateway, '/users/7', { headers: { 'x-api-key': `${key.key}x`, traceparent: 'not-a-traceparent' } })
    t.equal(badKey.answer.status, 401)
    t.match(badKey.line, { route: '/users/:id', principal: { type: 'anonymous', id: null }, trace_id: null })
  })

  await t.test('identity\'s line, reached through the gateway, has the same fields and names the user who logged in', async (t) => {
    const { answer, line } = await send(gateway, '/sessions', { method: 'POST', body: JSON.stringify({ session: { email: s.user.email, password: s.user.password } }), headers: { 'content-type': 'application/json' } })
    t.equal(answer.status, 201)
    t.match(line, { route: '/sessions', upstream: 'identity', principal: { type: 'anonymous', id: null } }, 'the gateway takes no credential for a login')
    const [identityLine] = await lineOf(s.logs, line.request_id as string)
    t.same(accessFieldsOf(identityLine), ACCESS_FIELDS, 'the same field names')
    t.match(identityLine, { route: '/sessions', upstream: null, status: 201, principal: { type: 'user', id: s.userId }, bytes_out: answer.bytes.length })
  })

  t.test('no credential anywhere in the gateway\'s or identity\'s lines', async (t) => {
    const text = gateway.logText() + s.logs.map((l) => JSON.stringify(l)).join('\n')
    t.notOk(text.includes(key.key), 'not the key')
    t.notOk(text.includes(key.key.slice(-12)), 'not its secret part')
    t.notOk(text.includes(tokens.access_token), 'not the bearer token')
    t.notOk(text.includes(tokens.access_token.split('.')[2] as string), 'not its signature')
  })
})

t.test('the console\'s line has the same fields, and names the signed-in user', async (t) => {
  const s = await startStack(t, { env: { IDENTITY_TRUST_PROXY: '127.0.0.1' } })
  const logs = captureLogs()
  const console = await startConsole(t, { identityPublicUrl: s.publicUrl, identityAdminUrl: s.adminUrl, now: s.clock.now, logStream: logs.stream })
  const gateway = await s.addGateway({ consoleUrl: console.url })
  const browser = new Browser(gateway.url)
  const form = await browser.get('/console/sign-in')
  const signedIn = await browser.post('/console/sign-in', { _csrf: csrfOf(form), email: s.user.email, password: s.user.password })
  t.equal(signedIn.status, 303, 'signed in')
  const requestId = randomUUID()
  const page = await browser.get('/console/keys', { 'x-request-id': requestId })
  t.equal(page.status, 200)
  const [line] = await lineOf(logs.lines, requestId)
  t.same(accessFieldsOf(line), ACCESS_FIELDS, 'the same field names')
  t.match(line, { name: 'console', method: 'GET', status: 200, upstream: null, principal: { type: 'user', id: s.userId }, bytes_out: Buffer.byteLength(page.text) })
})
