import t from 'tap'
import { assertJson } from '../helpers/assert.js'
import { rawRequest } from '../helpers/http.js'
import { runCorpus, startCorpus, type BadInput, type Reaches } from './corpus.js'

/**
 * Bad paths and methods through the gateway (the bad-input corpus): `%2e%2e`, `%2f`,
 * `//`, `\`, `..;`, `;` matrix parameters (raw and `%3b`), `#`, mixed case, trailing
 * dots, overlong UTF-8, raw bytes, absolute- and asterisk-form targets, WebSocket and
 * h2c upgrades, method-override headers and `_method`, and odd methods. A key that may
 * list users aims at /tasks; identity's admin token aims at /admin and /internal,
 * which the gateway never routes. None of it may reach a route the credential may
 * not use, and none of it may change anything.
 */

type Expect = [status: number, code: string, reaches: Reaches]
const BAD_PATH: Expect = [400, 'malformed_path', 'none']
/** Escapes that do not decode (overlong UTF-8) fail in the router, before the gate: Fastify's FST_ERR_BAD_URL. */
const BAD_URL: Expect = [400, 'malformed_url', 'none']
const NOT_FOUND: Expect = [404, 'not_found', 'none']
const MALFORMED_HTTP: Expect = [400, 'http_400', 'none']
const OVERRIDE: Expect = [400, 'method_override_refused', 'none']
const DENIED: Expect = [403, 'permission_denied', 'none']
const UPGRADE: Array<[string, string]> = [
  ['connection', 'Upgrade'], ['upgrade', 'websocket'], ['sec-websocket-key', 'dGhlIHNhbXBsZSBub25jZQ=='], ['sec-websocket-version', '13']
]

t.test('bad paths and methods', async (t) => {
  const corpus = await startCorpus(t)
  const { keys, stack } = corpus
  const usersOnly: [string, string] = ['x-api-key', keys.users.key]
  const asAdmin: [string, string] = ['authorization', `Bearer ${stack.adminToken}`]
  const JSON_TYPE: [string, string] = ['content-type', 'application/json']

  const send = (method: string, target: string | Buffer, headers: Array<[string, string]>, [status, code, reaches]: Expect,
    extra: Partial<BadInput> = {}): BadInput => ({
    name: `${method} ${typeof target === 'string' ? target : target.toString('latin1')}`, method, target, headers, status, code, reaches, ...extra
  })
  /** GET `target` with the users:list key: every one of these aims at /tasks, or is not /users. */
  const asUsersKey = (target: string | Buffer, expect: Expect, extra: Partial<BadInput> = {}): BadInput => send('GET', target, [usersOnly], expect, extra)
  const mallory = JSON.stringify({ email: 'mallory@example.com', password: 'mallory password', roles: ['reader'] })
  /** POST a new user to identity's admin API, with its real admin token, through whatever `target` resolves to. */
  const createUser = (target: string, expect: Expect): BadInput =>
    send('POST', target, [asAdmin, JSON_TYPE], expect, { body: mallory, name: `POST ${target} (create a user with the admin token)` })

  await t.test('path tricks from /users (allowed) towards /tasks (not allowed)', async (t) => {
    await runCorpus(t, corpus, [
      asUsersKey('/users/%2e%2e/tasks', BAD_PATH),
      asUsersKey('/users/%2E%2E/tasks', BAD_PATH),
      asUsersKey('/users/.%2e/tasks', BAD_PATH),
      asUsersKey('/users/..%2ftasks', BAD_PATH),
      asUsersKey('/users%2f..%2ftasks', BAD_PATH),
      asUsersKey('/users%2Ftasks', BAD_PATH),
      asUsersKey('/users/../tasks', BAD_PATH),
      asUsersKey('/users/./../tasks', BAD_PATH),
      asUsersKey('//tasks', BAD_PATH),
      asUsersKey('/users//../tasks', BAD_PATH),
      asUsersKey('/users\\..\\tasks', BAD_PATH),
      asUsersKey('/users/%5c..%5ctasks', BAD_PATH),
      asUsersKey('/users/..;/tasks', BAD_PATH),
      asUsersKey('/users;/../tasks', BAD_PATH),
      asUsersKey('/users;jsessionid=1', BAD_PATH),
      asUsersKey('/users/..%3b/tasks', BAD_PATH, { check: (t, answer) => { t.match(answer.body?.detail, /semicolon/, 'names the semicolon') } }),
      asUsersKey('/users%3Bx=1', BAD_PATH),
      asUsersKey('/users#/../tasks', BAD_PATH),
      asUsersKey('/users%23/../tasks', BAD_PATH),
      asUsersKey('/users/%252e%252e/tasks', BAD_PATH),
      asUsersKey('/users/%252f/tasks', BAD_PATH),
      asUsersKey('/users.', BAD_PATH),
      asUsersKey('/users..', BAD_PATH),
      asUsersKey('/tasks.', BAD_PATH),
      asUsersKey('/users%2e', BAD_PATH),
      asUsersKey('/users%00', BAD_PATH),
      asUsersKey('/users%0d%0ax-portier-permissions:%20*', BAD_PATH),
      asUsersKey('/users/%c0%ae%c0%ae/tasks', BAD_URL),
      asUsersKey('/users/%e0%80%ae%e0%80%ae/tasks', BAD_URL),
      asUsersKey('/users%c0%af..%c0%aftasks', BAD_URL),
      asUsersKey('/users/%f0%80%80%ae', BAD_URL),
      asUsersKey(Buffer.concat([Buffer.from('/users/'), Buffer.from([0xc0, 0xae, 0xc0, 0xae]), Buffer.from('/tasks')]), MALFORMED_HTTP),
      asUsersKey(Buffer.from('/us\u00e9rs', 'utf8'), MALFORMED_HTTP),
      asUsersKey('/users /tasks', MALFORMED_HTTP),
      asUsersKey(`/users/${'a'.repeat(3_000)}`, BAD_PATH),
      asUsersKey(`/users/${'a'.repeat(20_000)}`, [431, 'http_431', 'none']),
      asUsersKey('/Tasks', NOT_FOUND),
      asUsersKey('/TASKS', NOT_FOUND),
      asUsersKey('/Users', NOT_FOUND),
      asUsersKey('/uSeRs', NOT_FOUND),
      asUsersKey('/tasks%23', NOT_FOUND),
      asUsersKey('/tasks', DENIED),
      asUsersKey('/utilisateurs/../tasks', BAD_PATH),
      send('OPTIONS', '*', [usersOnly], BAD_PATH),
      asUsersKey(`http://${new URL(corpus.gateway.url).host}/tasks`, BAD_PATH)
    ])
  })

  await t.test('identity\'s /admin and /internal, with its real admin and service tokens', async (t) => {
    const adminHost = new URL(stack.adminUrl).host
    await runCorpus(t, corpus, [
      createUser('/admin/users', NOT_FOUND),
      createUser('/ADMIN/users', NOT_FOUND),
      createUser('/Admin/users', NOT_FOUND),
      createUser('/%61dmin/users', NOT_FOUND),
      createUser('/%2561dmin/users', NOT_FOUND),
      createUser('/admin/', NOT_FOUND),
      createUser('/admin;/users', BAD_PATH),
      createUser('/admin./users', BAD_PATH),
      createUser('/./admin/users', BAD_PATH),
      createUser('//admin/users', BAD_PATH),
      createUser('/admin%2fusers', BAD_PATH),
      createUser('/sessions/../admin/users', BAD_PATH),
      createUser('/sessions/..%2fadmin%2fusers', BAD_PATH),
      createUser('/sessions/%2e%2e/admin/users', BAD_PATH),
      createUser('/.well-known/jwks.json/../../admin/users', BAD_PATH),
      createUser('/jetons/..;/admin/users', BAD_PATH),
      createUser('/tokens/..%3b/admin/users', BAD_PATH),
      createUser('/echo/../admin/users', BAD_PATH),
      createUser('/echo/..%2f..%2fadmin/users', BAD_PATH),
      createUser('/admin/users#', BAD_PATH),
      createUser('/sessions/%c0%ae%c0%ae/admin/users', BAD_URL),
      createUser(`http://${adminHost}/admin/users`, BAD_PATH),
      send('POST', '/internal/keys/verify', [['authorization', `Bearer ${stack.serviceToken}`], JSON_TYPE], NOT_FOUND,
        { body: JSON.stringify({ key: keys.users.key }) }),
      send('GET', '/Internal/sessions/revoked?since=0', [['authorization', `Bearer ${stack.serviceToken}`]], NOT_FOUND),
      send('GET', '/internal%2fsessions%2frevoked', [['authorization', `Bearer ${stack.serviceToken}`]], BAD_PATH),
      send('DELETE', '/sessions/current/../../admin/sessions', [asAdmin], BAD_PATH),
      send('PUT', '/admin/roles/reader', [asAdmin, JSON_TYPE], NOT_FOUND, { body: JSON.stringify({ permissions: ['*'] }) })
    ])
  })

  await t.test('method overrides never change what is authorised', async (t) => {
    const bearer: [string, string] = ['authorization', `Bearer ${corpus.tokens.access_token}`]
    await runCorpus(t, corpus, [
      send('GET', '/users', [usersOnly, ['x-http-method-override', 'POST']], OVERRIDE),
      send('GET', '/users', [usersOnly, ['x-http-method', 'DELETE']], OVERRIDE),
      send('GET', '/users', [usersOnly, ['x-method-override', 'PATCH']], OVERRIDE),
      send('GET', '/users', [usersOnly, ['X-HTTP-Method-Override', 'POST']], OVERRIDE, { name: 'GET /users, X-HTTP-Method-Override in capitals' }),
      send('GET', '/users', [usersOnly, ['x-http-method-override', '']], OVERRIDE, { name: 'GET /users, an empty override' }),
      send('GET', '/users', [bearer, ['x-http-method-override', 'POST']], OVERRIDE, { name: 'GET /users, ADA\'s token with an override' }),
      send('POST', '/users', [usersOnly, JSON_TYPE, ['x-http-method-override', 'GET']], OVERRIDE,
        { body: JSON.stringify({ first_name: 'M' }), name: 'POST /users, pretending to be a GET' }),
      send('POST', '/users', [usersOnly, JSON_TYPE], DENIED, {
        body: JSON.stringify({ first_name: 'M' }),
        name: 'POST /users without override: the real method is what is authorised',
        check: (t, answer) => { t.equal(answer.body?.missing_permission, 'users:create', 'names users:create') }
      }),
      send('PATCH', '/users/1', [usersOnly, JSON_TYPE, ['x-http-method-override', 'GET']], OVERRIDE, { body: JSON.stringify({ last_name: 'M' }) }),
      send('POST', '/echo', [['x-api-key', keys.debug.key], JSON_TYPE, ['x-http-method-override', 'DELETE']], OVERRIDE, { body: '{}' }),
      asUsersKey('/users?_method=POST', OVERRIDE),
      asUsersKey('/users?%5Fmethod=POST', OVERRIDE),
      asUsersKey('/users?page=1&_method=DELETE', OVERRIDE)
    ])
  })

  await t.test('upgrade requests are ordinary requests', async (t) => {
    await runCorpus(t, corpus, [
      send('GET', '/users', UPGRADE, [401, 'credentials_missing', 'none'], { name: 'a WebSocket upgrade to /users without a credential' }),
      send('GET', '/tasks', [usersOnly, ...UPGRADE], DENIED, { name: 'a WebSocket upgrade to /tasks with the users:list key' }),
      send('GET', '/admin/keys', [asAdmin, ...UPGRADE], NOT_FOUND, { name: 'a WebSocket upgrade to /admin/keys with the admin token' }),
      send('GET', '/users/..%2ftasks', [usersOnly, ...UPGRADE], BAD_PATH, { name: 'a WebSocket upgrade to a path trick' }),
      send('GET', '/tasks', [usersOnly, ['connection', 'Upgrade, HTTP2-Settings'], ['upgrade', 'h2c'], ['http2-settings', 'AAMAAABkAAQAoAAAAAIAAAAA']],
        DENIED, { name: 'an h2c upgrade to /tasks with the users:list key' })
    ])
  })

  await t.test('odd methods and request lines', async (t) => {
    await runCorpus(t, corpus, [
      send('DELETE', '/users', [usersOnly], [405, 'method_not_allowed', 'none'],
        { check: (t, answer) => { t.equal(answer.headers.allow, 'GET, HEAD, POST', 'Allow') } }),
      send('TRACE', '/users', [usersOnly], NOT_FOUND),
      send('PROPFIND', '/users', [usersOnly], NOT_FOUND),
      send('get', '/users', [usersOnly], MALFORMED_HTTP, { name: 'get /users (a lower-case method)' }),
      {
        name: 'CONNECT to the Redis port: Node closes the connection unanswered (no connect listener)',
        raw: () => Buffer.from(`CONNECT ${new URL(stack.redis.url).host} HTTP/1.1\r\nhost: ${new URL(stack.redis.url).host}\r\n\r\n`),
        status: 0,
        code: null,
        reaches: 'none'
      }
    ])
  })

  await t.test('what the upstream receives', async (t) => {
    const before = await corpus.state()
    const debug = { 'x-api-key': keys.debug.key }

    const overridden = await rawRequest(corpus.gateway.url, '/echo', { headers: { ...debug, 'x-original-url': '/admin/users', 'x-rewrite-url': '/admin/users' } })
    assertJson(t, overridden, 200, 'GET /echo with X-Original-URL and X-Rewrite-URL')
    t.equal(overridden.body.path, '/echo', 'the upstream serves the path that was authorised')
    t.notOk('x-original-url' in overridden.body.headers, 'X-Original-URL is not forwarded')
    t.notOk('x-rewrite-url' in overridden.body.headers, 'X-Rewrite-URL is not forwarded')

    const upgrade = await rawRequest(corpus.gateway.url, '/echo', { headers: { ...debug, ...Object.fromEntries(UPGRADE) } })
    assertJson(t, upgrade, 200, 'a WebSocket upgrade to /echo is a plain GET: 200, never 101')
    t.notOk('upgrade' in upgrade.headers, 'no Upgrade in the answer')
    t.notOk('upgrade' in upgrade.body.headers, 'the upstream is not asked to upgrade')
    t.notMatch(String(upgrade.body.headers.connection ?? ''), /upgrade/i, 'nor told Connection: Upgrade')

    const trailing = await rawRequest(corpus.gateway.url, '/users/?per_page=1', { headers: { 'x-api-key': keys.users.key } })
    assertJson(t, trailing, 200, 'control: one trailing slash is normalised, not refused')
    t.same(await corpus.state(), before, 'no state changed')
  })

  await t.test('the gateway still serves', async (t) => {
    assertJson(t, await corpus.gateway.call('/users?per_page=1', { headers: { 'x-api-key': keys.users.key } }), 200, 'GET /users with the users key')
    assertJson(t, await corpus.gateway.call('/echo/admin', { headers: { 'x-api-key': keys.debug.key } }), 200,
      'GET /echo/admin: a wildcard route, served by the back-office mock, never by identity')
  })

  await corpus.leaks.assertNoLeaks(t)
})
