import t from 'tap'
import { request } from 'undici'
import { gunzipSync } from 'node:zlib'
import { buildUpstreamMock } from '../../upstream-mock/app.js'
import { deepJson } from '../../upstream-mock/edge-bodies.js'
import { http } from '../helpers/http.js'
import { JSON_TYPE, assertJson, assertProblem } from '../helpers/assert.js'
import { startUpstreamMock } from '../helpers/upstream-mock.js'

/** A request with exactly these headers (fetch would add accept-encoding and decode gzip itself). */
async function raw (url: string, headers: Record<string, string> = {}) {
  const answer = await request(url, { headers })
  return { status: answer.statusCode, headers: answer.headers, body: Buffer.from(await answer.body.arrayBuffer()) }
}

t.test('happy: /slow answers after delay_ms', async (t) => {
  const { url } = await startUpstreamMock(t)
  const started = performance.now()
  const answer = await http(`${url}/slow?delay_ms=300`)
  const elapsedMs = performance.now() - started
  assertJson(t, answer, 200)
  t.same(answer.body, { waited_ms: 300 })
  t.ok(elapsedMs >= 295, 'not before the delay', { elapsedMs })
  t.same((await http(`${url}/slow?delay_ms=0`)).body, { waited_ms: 0 }, 'zero: at once')
  for (const query of ['', '?delay_ms=-1', '?delay_ms=60001', '?delay_ms=soon']) {
    assertProblem(t, await http(`${url}/slow${query}`), 400, 'validation_failed', `/slow${query}`)
  }
})

t.test('happy: a slow answer never holds up closing', async (t) => {
  const app = await buildUpstreamMock({ logLevel: 'silent' })
  const url = await app.listen({ host: '127.0.0.1', port: 0 })
  // Resolves once the server has taken the request (after Fastify's own listener has run).
  const received = new Promise((resolve) => app.server.once('request', () => setImmediate(resolve)))
  const pending = http(`${url}/slow?delay_ms=60000`)
  await received
  const started = performance.now()
  await app.close()
  const answer = await pending
  t.ok(performance.now() - started < 5000, 'closed without waiting for the delay')
  assertProblem(t, answer, 503, 'service_unavailable', 'the pending request is told the service is going away')

  const other = await buildUpstreamMock({ logLevel: 'silent' })
  const otherUrl = await other.listen({ host: '127.0.0.1', port: 0 })
  const taken = new Promise((resolve) => other.server.once('request', () => setImmediate(resolve)))
  const abort = new AbortController()
  const abandoned = fetch(`${otherUrl}/slow?delay_ms=60000`, { signal: abort.signal }).catch((err: Error) => err.name)
  await taken
  abort.abort()
  t.equal(await abandoned, 'AbortError', 'the client gave up (a gateway timing out)')
  const closing = performance.now()
  await other.close()
  t.ok(performance.now() - closing < 5000, 'an abandoned slow request does not hold up closing')
})

t.test('happy: /text is plain text', async (t) => {
  const { url } = await startUpstreamMock(t)
  const answer = await raw(`${url}/text`, { 'accept-encoding': 'gzip' })
  t.equal(answer.status, 200)
  t.equal(answer.headers['content-type'], 'text/plain; charset=utf-8')
  t.equal(answer.headers['content-encoding'], undefined, 'never compressed')
  t.equal(answer.body.toString(), 'upstream-mock: plain text.\nNot JSON: {"user_name": "must not be inflected"}\n')
})

t.test('happy: /gzip is gzip whatever the request accepts', async (t) => {
  const { url } = await startUpstreamMock(t, { users: 50 })
  const plainList = (await raw(`${url}/users?per_page=20`)).body.toString()
  for (const acceptEncoding of [undefined, 'identity', 'gzip;q=0', 'br']) {
    const answer = await raw(`${url}/gzip`, acceptEncoding === undefined ? {} : { 'accept-encoding': acceptEncoding })
    const label = `accept-encoding: ${acceptEncoding ?? '(none)'}`
    t.equal(answer.status, 200, label)
    t.equal(answer.headers['content-encoding'], 'gzip', `${label}: gzip anyway`)
    t.equal(answer.headers['content-type'], JSON_TYPE, label)
    t.equal(Number(answer.headers['content-length']), answer.body.length, `${label}: length of the compressed bytes`)
    t.equal(gunzipSync(answer.body).toString(), plainList, `${label}: the first 20 users, as GET /users?per_page=20 gives them`)
  }
})

t.test('happy: JSON answers are gzip only when the request accepts gzip', async (t) => {
  const { url } = await startUpstreamMock(t)
  const plain = await raw(`${url}/users?per_page=5`)
  t.equal(plain.headers['content-encoding'], undefined, 'no accept-encoding: plain')
  t.equal(plain.headers.vary, 'accept-encoding')
  const users = JSON.parse(plain.body.toString())
  t.equal(users.users.length, 5)
  for (const acceptEncoding of ['identity', 'gzip;q=0', 'deflate, br', 'gzip;q=0, *']) {
    const answer = await raw(`${url}/users?per_page=5`, { 'accept-encoding': acceptEncoding })
    t.equal(answer.headers['content-encoding'], undefined, `${acceptEncoding}: plain`)
    t.equal(answer.body.toString(), plain.body.toString(), `${acceptEncoding}: same bytes`)
  }
  for (const acceptEncoding of ['gzip', 'GZIP', 'deflate, gzip;q=0.5', 'br;q=1, *;q=0.1', 'x-gzip']) {
    const answer = await raw(`${url}/users?per_page=5`, { 'accept-encoding': acceptEncoding })
    t.equal(answer.headers['content-encoding'], 'gzip', `${acceptEncoding}: gzip`)
    t.equal(gunzipSync(answer.body).toString(), plain.body.toString(), `${acceptEncoding}: same JSON inside`)
  }
  const problem = await raw(`${url}/users/999`, { 'accept-encoding': 'gzip' })
  t.equal(problem.headers['content-encoding'], 'gzip', 'problem+json too')
  t.match(JSON.parse(gunzipSync(problem.body).toString()), { code: 'resource_not_found' })
})

t.test('happy: /edge-keys keeps every awkward member name, __proto__ as an own member', async (t) => {
  const { url } = await startUpstreamMock(t)
  const answer = await raw(`${url}/edge-keys`)
  t.equal(answer.status, 200)
  t.equal(answer.headers['content-type'], JSON_TYPE)
  const parsed = JSON.parse(answer.body.toString()) as Record<string, unknown>
  t.ok(Object.hasOwn(parsed, '__proto__'), '__proto__ is an own member')
  t.equal(Object.getPrototypeOf(parsed), Object.prototype, 'not a prototype change')
  t.same(Object.getOwnPropertyDescriptor(parsed, '__proto__')?.value, { is_polluted: true })
  const keys = ['__proto__', 'constructor', 'prototype', 'address_line_1', '_leading_underscore', '__double_leading', 'trailing_',
    'HTTPServer', 'userID', 'already-dashed', 'CamelCase', 'with space', '日本語_key', 'x', '']
  for (const key of keys) t.ok(Object.hasOwn(parsed, key), `has "${key}"`)
  const items = parsed.nested_items as Array<Record<string, unknown>>
  t.ok(Array.isArray(items) && Object.hasOwn(items[0] as object, '__proto__') && Object.hasOwn(items[0] as object, ''), 'in arrays of objects too')
  t.same((items[0] as { deeper_items: unknown }).deeper_items, [[{ __double_leading: 'in an array of arrays', userID: null }]])
  t.same(parsed.collision, { user_name: 'from snake', userName: 'from camel' }, 'two names that camelCase alike')
  t.equal(({} as Record<string, unknown>).is_polluted, undefined, 'parsing it polluted nothing')
})

t.test('happy: /deep nests depth objects', async (t) => {
  const { url } = await startUpstreamMock(t)
  t.same((await http(`${url}/deep?depth=1`)).body, { leaf_depth: 1 })
  t.same((await http(`${url}/deep?depth=3`)).body, { child_node: { child_node: { leaf_depth: 3 } } })
  const deepest = await raw(`${url}/deep?depth=100000`)
  t.equal(deepest.status, 200)
  t.equal(deepest.headers['content-type'], JSON_TYPE)
  const text = deepest.body.toString()
  t.equal(text, deepJson(100_000), 'the full text')
  t.ok(text.startsWith('{"child_node":{"child_node":') && text.endsWith('{"leaf_depth":100000}' + '}'.repeat(99_999)), 'shape')
  t.equal(text.split('{').length - 1, 100_000, '100 000 objects')
  for (const query of ['', '?depth=0', '?depth=100001', '?depth=deep']) {
    assertProblem(t, await http(`${url}/deep${query}`), 400, 'validation_failed', `/deep${query}`)
  }
})

t.test('happy: /status/:code answers that status', async (t) => {
  const { url } = await startUpstreamMock(t)
  for (const code of [200, 201, 202, 299, 302, 400, 401, 404, 409, 418, 429, 500, 502, 503, 504, 599]) {
    const answer = await raw(`${url}/status/${code}`)
    t.equal(answer.status, code, `status ${code}`)
    t.equal(answer.headers['content-type'], JSON_TYPE, `${code}: JSON`)
    t.same(JSON.parse(answer.body.toString()), { status_code: code }, `${code}: body`)
  }
  for (const code of [204, 205, 304]) {
    const answer = await raw(`${url}/status/${code}`)
    t.equal(answer.status, code, `status ${code}`)
    t.equal(answer.body.length, 0, `${code}: no content`)
  }
  for (const code of ['100', '199', '600', 'teapot']) {
    assertProblem(t, await http(`${url}/status/${code}`), 400, 'validation_failed', `/status/${code}`)
  }
})

t.test('happy: /healthz', async (t) => {
  const { url } = await startUpstreamMock(t)
  const answer = await http(`${url}/healthz`)
  assertJson(t, answer, 200)
  t.same(answer.body, { status: 'ok' })
})
