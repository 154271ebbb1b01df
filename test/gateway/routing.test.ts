import t from 'tap'
import { assertJson, assertProblem, assertStatus } from '../helpers/assert.js'
import { startGateway, startStack } from '../helpers/gateway.js'
import { rawRequest } from '../helpers/http.js'

/**
 * Routing through a running gateway: unknown paths, other methods, routes denied by
 * config, paths the gateway never routes, path tricks that must not reach another
 * route's upstream, method overrides and WebSocket upgrades.
 */
t.test('routing through a running gateway', async (t) => {
  const s = await startStack(t)
  const { gateway } = s
  const usersKey = await s.createKey(['users:list'])
  const usersOnly = { 'x-api-key': usersKey.key }

  t.test('an unknown path is a 404, with or without a credential', async (t) => {
    assertProblem(t, await gateway.call('/nowhere'), 404, 'not_found', 'GET /nowhere without a credential')
    assertProblem(t, await gateway.call('/nowhere', { headers: usersOnly }), 404, 'not_found', 'GET /nowhere with a key')
    assertProblem(t, await gateway.call('/users/1/tasks', { headers: usersOnly }), 404, 'not_found', 'a longer path than any route')
  })

  t.test('a declared path with another method is a 405 with Allow', async (t) => {
    const users = await gateway.call('/users', { method: 'DELETE', headers: usersOnly })
    assertProblem(t, users, 405, 'method_not_allowed', 'DELETE /users')
    t.equal(users.headers.allow, 'GET, HEAD, POST', 'Allow lists the declared methods (HEAD with GET)')
    const one = await gateway.call('/users/7', { method: 'PUT', headers: usersOnly, body: {} })
    assertProblem(t, one, 405, 'method_not_allowed', 'PUT /users/7')
    t.equal(one.headers.allow, 'GET, HEAD, PATCH', 'Allow for /users/:id')
  })

  t.test('a route declared with permission: null is denied even to *', async (t) => {
    const denied = await startGateway(t, {
      ...s.gatewaySetup,
      upstreams: {
        upstreams: [{
          name: 'backoffice',
          target: s.upstreamUrl,
          routes: [{ method: 'GET', path: '/echo', permission: null }, { method: 'GET', path: '/users', permission: 'users:list' }]
        }]
      }
    })
    const everything = await s.createKey(['*'])
    const answer = await denied.call('/echo', { headers: { 'x-api-key': everything.key } })
    assertProblem(t, answer, 403, 'permission_not_declared', 'GET /echo with a * key')
    assertJson(t, await denied.call('/users', { headers: { 'x-api-key': everything.key } }), 200, 'while a declared route works for the same key')
    t.ok(denied.logs.some((line) => line.level === 40 && String(line.msg).includes('declares no permission')), 'the gateway warned at start')
  })

  t.test('/admin and /internal are never routed, even with identity\'s admin token', async (t) => {
    const admin = { authorization: `Bearer ${s.adminToken}` }
    for (const [method, path] of [['GET', '/admin/keys'], ['GET', '/admin/users'], ['POST', '/admin/keys'], ['GET', '/admin'],
      ['POST', '/internal/keys/verify'], ['GET', '/internal/sessions/revoked'], ['GET', '/internal']] as const) {
      const answer = await gateway.call(path, { method, headers: admin, ...(method === 'POST' ? { body: {} } : {}) })
      assertProblem(t, answer, 404, 'not_found', `${method} ${path}`)
    }
    for (const raw of ['/%61dmin/keys', '/admin/', '/ADMIN/keys', '/internal/%6beys/verify']) {
      const answer = await rawRequest(gateway.url, raw, { headers: admin })
      t.ok(answer.status === 404 || (answer.status === 400 && answer.body?.code === 'malformed_path'), `${raw}: 404 or 400`, { status: answer.status })
    }
  })

  t.test('path tricks never reach a route the key may not use', async (t) => {
    // An escape that does not decode (overlong UTF-8 such as %c0%ae) is refused by the HTTP layer before
    // routing, as 400 `malformed_url`; the gate refuses every other trick as 400 `malformed_path`.
    const tricks = [
      '/users/%2e%2e/tasks', '/users/..%2ftasks', '//tasks', '/users/../tasks', '/users/./1', '/users;x=1', '/users/..;/tasks',
      '/users%2F1', '/users\\..\\tasks', '/users%00', '/users/%c0%ae%c0%ae/tasks', '/Users', '/USERS',
      '/users/%252e%252e/tasks', '/users/.%2e/tasks', '/users/..', '/users.', '/users%2f..%2ftasks', '/%75sers/../tasks'
    ]
    for (const raw of tricks) {
      const answer = await rawRequest(gateway.url, raw, { headers: usersOnly })
      const refused = answer.status === 404 || (answer.status === 400 && ['malformed_path', 'malformed_url'].includes(answer.body?.code))
      t.ok(refused, `${raw}: 400 malformed_path/malformed_url or 404`, { status: answer.status, code: answer.body?.code })
      t.notOk('tasks' in (answer.body ?? {}), `${raw}: no tasks body`)
      t.equal(answer.headers['x-upstream-principal'], undefined, `${raw}: never reached an upstream`)
    }
    // The same key on its own route, to show the refusals above are about the path.
    assertJson(t, await rawRequest(gateway.url, '/users?per_page=1', { headers: usersOnly }), 200, 'GET /users with the same key')
  })

  t.test('one trailing slash is normalised', async (t) => {
    const answer = await rawRequest(gateway.url, '/users/?per_page=2', { headers: usersOnly })
    assertJson(t, answer, 200, 'GET /users/')
    t.equal(answer.body.users.length, 2, 'the users page, query kept')
    t.equal(answer.headers['x-upstream-principal'], usersKey.id, 'served by the upstream for the key')
  })

  t.test('method-override headers and ?_method are refused', async (t) => {
    for (const header of ['x-http-method-override', 'x-http-method', 'x-method-override']) {
      const answer = await gateway.call('/users', { headers: { ...usersOnly, [header]: 'DELETE' } })
      assertProblem(t, answer, 400, 'method_override_refused', `GET /users with ${header}`)
      t.equal(answer.headers['x-upstream-principal'], undefined, `${header}: not forwarded`)
    }
    assertProblem(t, await gateway.call('/users?_method=DELETE', { headers: usersOnly }), 400, 'method_override_refused', 'GET /users?_method=DELETE')
    assertProblem(t, await gateway.call('/users?page=1&_method=DELETE', { headers: usersOnly }), 400, 'method_override_refused',
      '_method after another parameter')
  })

  t.test('a WebSocket upgrade is an ordinary request', async (t) => {
    const upgrade = {
      connection: 'Upgrade',
      upgrade: 'websocket',
      'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==',
      'sec-websocket-version': '13'
    }
    const anonymous = await rawRequest(gateway.url, '/users', { headers: upgrade })
    assertProblem(t, anonymous, 401, 'credentials_missing', 'an upgrade without a credential')
    t.equal(anonymous.headers['x-upstream-principal'], undefined, 'no upstream saw it')

    const withKey = await rawRequest(gateway.url, '/users?per_page=1', { headers: { ...upgrade, ...usersOnly } })
    assertJson(t, withKey, 200, 'an upgrade with a key: a plain 200, no 101')
    t.equal(withKey.body.users.length, 1, 'the users page')
    t.notOk('upgrade' in withKey.headers, 'no Upgrade in the answer')

    const echoKey = await s.createKey(['debug:read'])
    const echo = await rawRequest(gateway.url, '/echo', { headers: { ...upgrade, 'x-api-key': echoKey.key } })
    assertStatus(t, echo, 200, 'an upgrade to /echo')
    t.notOk('upgrade' in (echo.body?.headers ?? {}), 'the upstream is not asked to upgrade')
  })
})
