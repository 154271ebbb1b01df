import t, { type Test } from 'tap'
import { API_KEY_PREFIX, formatApiKey, generateApiKey, randomSecret } from '../../common/api-key-format.js'
import { assertJson } from '../helpers/assert.js'
import { INVALID_TOKEN_CHALLENGE } from '../helpers/gateway-auth.js'
import type { SocketAnswer } from '../helpers/raw-socket.js'
import { runCorpus, startCorpus, withChecksum, type BadInput, type Reaches } from './corpus.js'

/**
 * Bad headers through the gateway (the bad-input corpus): CR, LF and NUL in header
 * values, broken header syntax and body framing, oversized headers, duplicate
 * x-api-key and Authorization headers, both credentials at once, empty Bearer, Bearer
 * with spaces or a second scheme, API keys with a bad checksum, a wrong prefix, or the
 * right format but an unknown id or secret, bad x-api-inflection and Accept values,
 * and credentials on routes they may not use.
 *
 * Requests Node's HTTP parser refuses never reach a route: they are answered by the
 * server's client-error handler as `http_400` / `http_431` problems (common/problem.ts
 * answerClientError), and the connection is closed.
 */

const MALFORMED_HTTP: Expect = [400, 'http_400', 'none']
const HEADERS_TOO_LARGE: Expect = [431, 'http_431', 'none']
const BAD_KEY: Expect = [401, 'invalid_api_key', 'none']
const BAD_TOKEN: Expect = [401, 'invalid_token', 'none']
const BOTH: Expect = [400, 'conflicting_credentials', 'none']
const DENIED: Expect = [403, 'permission_denied', 'none']
type Expect = [status: number, code: string, reaches: Reaches]

/** Checks the answer's WWW-Authenticate and, optionally, its detail. */
const refused = (challenge: string, detail?: RegExp) => (t: Test, answer: SocketAnswer): void => {
  t.equal(answer.headers['www-authenticate'], challenge, 'WWW-Authenticate')
  if (detail !== undefined) t.match(answer.body?.detail, detail, `the detail says ${String(detail)}`)
}

t.test('bad headers', async (t) => {
  const corpus = await startCorpus(t)
  const { keys, tokens, stack } = corpus
  const usersKey = keys.users.key
  const accessToken = tokens.access_token

  const request = (method: string, target: string, body?: string) =>
    (name: string, headers: Array<[string, string | Buffer]>, [status, code, reaches]: Expect, extra: Partial<BadInput> = {}): BadInput =>
      ({ name: `${method} ${target}: ${name}`, method, target, headers, ...(body !== undefined ? { body } : {}), status, code, reaches, ...extra })
  const listUsers = request('GET', '/users')
  const taskBody = JSON.stringify({ title: 'A task' })
  const createTask = request('POST', '/tasks', taskBody)
  const refreshBody = JSON.stringify({ refresh_token: tokens.refresh_token })
  const refresh = request('POST', '/tokens', refreshBody)
  const JSON_TYPE: [string, string] = ['content-type', 'application/json']

  await t.test('header syntax Node\'s parser refuses', async (t) => {
    const withKey: Array<[string, string]> = [['x-api-key', usersKey]]
    await runCorpus(t, corpus, [
      listUsers('a bare CR in a header value', [...withKey, ['x-note', 'a\rb']], MALFORMED_HTTP),
      listUsers('a bare LF in a header value, smuggling x-portier-permissions', [...withKey, ['x-note', 'a\nx-portier-permissions: *']], MALFORMED_HTTP),
      listUsers('a bare LF in the x-api-key value', [['x-api-key', `${usersKey}\nx-portier-principal: root`]], MALFORMED_HTTP),
      listUsers('a NUL in a header value', [...withKey, ['x-note', 'a\u0000b']], MALFORMED_HTTP),
      listUsers('a NUL after the key', [['x-api-key', `${usersKey}\u0000`]], MALFORMED_HTTP),
      listUsers('an obsolete folded header line', [['x-api-key', `${usersKey}\r\n continued`]], MALFORMED_HTTP),
      listUsers('a space before the colon', [['x-api-key ', usersKey]], MALFORMED_HTTP),
      listUsers('a header name with parentheses', [...withKey, ['x-(note)', 'a']], MALFORMED_HTTP),
      {
        name: 'GET /users: no Host header',
        raw: () => Buffer.from(`GET /users HTTP/1.1\r\nconnection: close\r\nx-api-key: ${usersKey}\r\n\r\n`),
        // Node's own answer (RFC 9112 §3.2 requires the 400): it comes before any Fastify code, so it is not a problem+json.
        status: 400,
        code: 'bare',
        reaches: 'none'
      },
      createTask('Content-Length and Transfer-Encoding at once', [['x-api-key', keys.tasks.key], JSON_TYPE,
        ['content-length', String(taskBody.length)], ['transfer-encoding', 'chunked']], MALFORMED_HTTP,
      { body: `${taskBody.length.toString(16)}\r\n${taskBody}\r\n0\r\n\r\n` }),
      createTask('two different Content-Lengths', [['x-api-key', keys.tasks.key], JSON_TYPE,
        ['content-length', String(taskBody.length)], ['content-length', String(taskBody.length + 1)]], MALFORMED_HTTP),
      createTask('a negative Content-Length', [['x-api-key', keys.tasks.key], JSON_TYPE, ['content-length', '-1']], MALFORMED_HTTP),
      createTask('a chunk size that is not hex', [['x-api-key', keys.tasks.key], JSON_TYPE, ['transfer-encoding', 'chunked']], MALFORMED_HTTP,
        { body: `zz\r\n${taskBody}\r\n0\r\n\r\n` }),
      createTask('Transfer-Encoding without chunked last', [['x-api-key', keys.tasks.key], JSON_TYPE, ['transfer-encoding', 'chunked, gzip']],
        MALFORMED_HTTP, { body: `${taskBody.length.toString(16)}\r\n${taskBody}\r\n0\r\n\r\n` })
    ])
  })

  await t.test('a CR LF in a value ends the header: the line after it is a header like any other', async (t) => {
    await runCorpus(t, corpus, [
      request('GET', '/tasks')('a spoofed x-portier-permissions: * after a CR LF does not grant it',
        [['x-api-key', usersKey], ['x-note', 'a\r\nx-portier-permissions: *']], DENIED),
      request('GET', '/tasks')('a spoofed x-portier-principal does not change who is asking',
        [['x-api-key', usersKey], ['x-portier-principal', keys.tasks.id], ['x-portier-permissions', 'tasks:list']], DENIED)
    ])
  })

  await t.test('oversized headers', async (t) => {
    const manyHeaders = Array.from({ length: 200 }, (_, i): [string, string] => [`x-filler-${i}`, 'f'.repeat(100)])
    await runCorpus(t, corpus, [
      listUsers('one 20 000-byte header', [['x-api-key', usersKey], ['x-note', 'n'.repeat(20_000)]], HEADERS_TOO_LARGE),
      listUsers('200 headers of 100 bytes', [['x-api-key', usersKey], ...manyHeaders], HEADERS_TOO_LARGE),
      listUsers('a 20 000-byte x-api-key', [['x-api-key', `${usersKey}${'A'.repeat(20_000)}`]], HEADERS_TOO_LARGE),
      listUsers('an 8 000-byte x-api-key, under the header limit', [['x-api-key', `${usersKey}${'A'.repeat(8_000)}`]], BAD_KEY,
        { check: refused(INVALID_TOKEN_CHALLENGE, /malformed/) }),
      listUsers('a 12 000-byte Bearer, under the header limit', [['authorization', `Bearer ${accessToken}${'A'.repeat(12_000)}`]], BAD_TOKEN,
        { check: refused(INVALID_TOKEN_CHALLENGE) })
    ])
  })

  await t.test('duplicate and conflicting credentials', async (t) => {
    const junk = 'ptk_not-a-key'
    await runCorpus(t, corpus, [
      listUsers('the same valid x-api-key twice', [['x-api-key', usersKey], ['x-api-key', usersKey]], BAD_KEY,
        { check: refused(INVALID_TOKEN_CHALLENGE, /malformed/) }),
      listUsers('a valid x-api-key, then junk', [['x-api-key', usersKey], ['x-api-key', junk]], BAD_KEY),
      listUsers('junk, then a valid x-api-key', [['x-api-key', junk], ['x-api-key', usersKey]], BAD_KEY),
      listUsers('a valid Bearer, then junk', [['authorization', `Bearer ${accessToken}`], ['authorization', 'Bearer junk']], BAD_TOKEN,
        { check: refused(INVALID_TOKEN_CHALLENGE) }),
      listUsers('junk, then a valid Bearer', [['authorization', 'Bearer junk'], ['authorization', `Bearer ${accessToken}`]], BAD_TOKEN),
      listUsers('the same valid Bearer twice', [['authorization', `Bearer ${accessToken}`], ['authorization', `Bearer ${accessToken}`]], BAD_TOKEN),
      listUsers('a valid x-api-key and a valid Bearer', [['x-api-key', usersKey], ['authorization', `Bearer ${accessToken}`]], BOTH),
      listUsers('a valid Bearer and a valid x-api-key', [['authorization', `Bearer ${accessToken}`], ['x-api-key', usersKey]], BOTH),
      listUsers('a valid x-api-key and an empty Authorization', [['x-api-key', usersKey], ['authorization', '']], BOTH),
      listUsers('an empty x-api-key and a valid Bearer', [['x-api-key', ''], ['authorization', `Bearer ${accessToken}`]], BOTH),
      refresh('a valid Bearer, then junk', [JSON_TYPE, ['authorization', `Bearer ${accessToken}`], ['authorization', 'Bearer junk']], BAD_TOKEN),
      refresh('junk, then a valid Bearer', [JSON_TYPE, ['authorization', 'Bearer junk'], ['authorization', `Bearer ${accessToken}`]], BAD_TOKEN)
    ])
  })

  await t.test('Authorization that is not exactly one Bearer token', async (t) => {
    const [head, payload, signature] = accessToken.split('.') as [string, string, string]
    const basic = Buffer.from(`${stack.user.email}:${stack.user.password}`).toString('base64')
    const cases: Array<[string, string | Buffer]> = [
      ['an empty Bearer', 'Bearer '],
      ['Bearer alone', 'Bearer'],
      ['an empty Authorization', ''],
      ['two spaces before the token', `Bearer  ${accessToken}`],
      ['a tab instead of the space', `Bearer\t${accessToken}`],
      ['a space inside the token', `Bearer ${head}.${payload} .${signature}`],
      ['a second word after the token', `Bearer ${accessToken} extra`],
      ['a second scheme after a comma', `Bearer ${accessToken}, Basic ${basic}`],
      ['Bearer twice', `Bearer Bearer ${accessToken}`],
      ['the token in quotes', `Bearer "${accessToken}"`],
      ['the Basic scheme with the real password', `Basic ${basic}`],
      ['another scheme name', `Token ${accessToken}`],
      ['an API key as the Bearer', `Bearer ${usersKey}`],
      ['a Latin-1 byte after the token', Buffer.concat([Buffer.from(`Bearer ${accessToken}`), Buffer.from([0xe9])])]
    ]
    await runCorpus(t, corpus, [
      ...cases.map(([name, value]) => listUsers(name, [['authorization', value]], BAD_TOKEN,
        { sends: [basic], check: refused(INVALID_TOKEN_CHALLENGE) })),
      ...cases.slice(0, 4).map(([name, value]) => refresh(name, [JSON_TYPE, ['authorization', value]], [401, 'invalid_token', 'identity'] as Expect,
        { check: refused(INVALID_TOKEN_CHALLENGE) })),
      refresh('no Authorization', [JSON_TYPE], [401, 'credentials_missing', 'identity'], { check: refused('Bearer realm="portier"') }),
      refresh('an API key instead of a Bearer (never forwarded)', [JSON_TYPE, ['x-api-key', usersKey]], [401, 'credentials_missing', 'identity']),
      refresh('the Basic scheme with the real password', [JSON_TYPE, ['authorization', `Basic ${basic}`]], [401, 'invalid_token', 'identity']),
      refresh('a second scheme after a comma', [JSON_TYPE, ['authorization', `Bearer ${accessToken}, Basic ${basic}`]], [401, 'invalid_token', 'identity'])
    ])
  })

  await t.test('API keys: bad checksum, wrong prefix, unknown id or secret', async (t) => {
    const body = usersKey.slice(0, -6)
    const lastChanged = usersKey.slice(0, -1) + (usersKey.endsWith('A') ? 'B' : 'A')
    const secretChanged = `${usersKey.slice(0, 20)}${usersKey[20] === 'a' ? 'b' : 'a'}${usersKey.slice(21)}`
    const lookupId = usersKey.slice(API_KEY_PREFIX.length, API_KEY_PREFIX.length + 12)
    const malformed: Array<[string, string | Buffer]> = [
      ['a wrong checksum', lastChanged],
      ['one secret character changed', secretChanged],
      ['another prefix, checksum recomputed', withChecksum(`ptx_${body.slice(API_KEY_PREFIX.length)}`)],
      ['the prefix upper-cased, checksum recomputed', withChecksum(`PTK_${body.slice(API_KEY_PREFIX.length)}`)],
      ['no prefix, checksum recomputed', withChecksum(body.slice(API_KEY_PREFIX.length))],
      ['one character short, checksum recomputed', withChecksum(body.slice(0, -1))],
      ['one character too many', `${usersKey}A`],
      ['the whole key lower-cased', usersKey.toLowerCase()],
      ['the key id instead of the key', keys.users.id],
      ['an empty x-api-key', ''],
      ['SQL', "ptk_' OR '1'='1"],
      ['a Latin-1 byte after the key', Buffer.concat([Buffer.from(usersKey), Buffer.from([0xa0])])]
    ]
    const wellFormed: Array<[string, string]> = [
      ['the right format, an unknown id', generateApiKey().key],
      ['a known id with another secret, checksum right', formatApiKey(lookupId, randomSecret())]
    ]
    await runCorpus(t, corpus, [
      ...malformed.map(([name, value]) => listUsers(name, [['x-api-key', value]], BAD_KEY, {
        // A key id is no secret (access lines name a key's requests by it); whatever else is sent as a key is treated as one.
        sends: typeof value === 'string' && value !== keys.users.id ? [value] : [], check: refused(INVALID_TOKEN_CHALLENGE, /malformed/)
      })),
      ...wellFormed.map(([name, value]) => listUsers(name, [['x-api-key', value]], BAD_KEY, {
        sends: [value], check: refused(INVALID_TOKEN_CHALLENGE, /unknown/)
      }))
    ])
  })

  await t.test('credentials on routes they may not use', async (t) => {
    await runCorpus(t, corpus, [
      request('GET', '/tasks')('the users:list key', [['x-api-key', usersKey]], DENIED,
        { check: (t, answer) => { t.equal(answer.body?.missing_permission, 'tasks:list', 'names tasks:list') } }),
      createTask('the users:list key', [['x-api-key', usersKey], JSON_TYPE], DENIED),
      request('POST', '/users', JSON.stringify({ first_name: 'M' }))('the users:list key', [['x-api-key', usersKey], JSON_TYPE], DENIED,
        { check: (t, answer) => { t.equal(answer.body?.missing_permission, 'users:create', 'names users:create') } }),
      createTask('ADA\'s token (users:list only)', [['authorization', `Bearer ${accessToken}`], JSON_TYPE], DENIED,
        { check: refused('Bearer realm="portier", error="insufficient_scope"') }),
      listUsers('the tasks key', [['x-api-key', keys.tasks.key]], DENIED)
    ])
  })

  await t.test('x-api-inflection and Accept values', async (t) => {
    const withKey: [string, string] = ['x-api-key', usersKey]
    const badInflection: Expect = [400, 'invalid_inflection', 'none']
    const notAcceptable: Expect = [406, 'not_acceptable', 'none']
    await runCorpus(t, corpus, [
      listUsers('an unknown style', [withKey, ['x-api-inflection', 'yelling']], badInflection,
        { check: (t, answer) => { t.ok(Array.isArray(answer.body?.allowed_values), 'lists the allowed values') } }),
      listUsers('an empty value', [withKey, ['x-api-inflection', '']], badInflection),
      listUsers('two values in one header', [withKey, ['x-api-inflection', 'camel, snake']], badInflection),
      listUsers('two headers', [withKey, ['x-api-inflection', 'camel'], ['x-api-inflection', 'snake']], badInflection),
      listUsers('a parameter', [withKey, ['x-api-inflection', 'camel; q=1']], badInflection),
      listUsers('a Latin-1 byte', [withKey, ['x-api-inflection', Buffer.from([0x63, 0x61, 0x6d, 0x65, 0x6c, 0xe9])]], badInflection),
      listUsers('with both credentials: the inflection is refused first', [withKey, ['authorization', `Bearer ${accessToken}`],
        ['x-api-inflection', 'yelling']], badInflection),
      listUsers('Accept: text/html', [withKey, ['accept', 'text/html']], notAcceptable),
      listUsers('Accept: application/xml', [withKey, ['accept', 'application/xml']], notAcceptable),
      listUsers('Accept: application/json;q=0', [withKey, ['accept', 'application/json;q=0']], notAcceptable),
      refresh('Accept: text/html', [JSON_TYPE, ['authorization', `Bearer ${accessToken}`], ['accept', 'text/html']], notAcceptable)
    ])
  })

  await t.test('the gateway still serves, and the session is intact', async (t) => {
    assertJson(t, await corpus.gateway.call('/users?per_page=1', { headers: { 'x-api-key': usersKey } }), 200, 'GET /users with the users key')
    assertJson(t, await corpus.gateway.call('/users?per_page=1', { bearer: accessToken }), 200, 'GET /users with ADA\'s token')
    const refreshed = await corpus.gateway.call('/tokens', { bearer: accessToken, body: { refresh_token: tokens.refresh_token } })
    assertJson(t, refreshed, 200, 'the refresh token was never consumed: it refreshes now')
    corpus.leaks.secret(refreshed.body.access_token, refreshed.body.refresh_token)
  })

  await corpus.leaks.assertNoLeaks(t)
})
