import t from 'tap'
import { assertJson, assertProblem, assertStatus } from '../helpers/assert.js'
import { startStack } from '../helpers/gateway.js'
import { ADA, sidOf } from '../helpers/session-setup.js'
import { startRedis } from '../helpers/redis.js'

/**
 * The seed's whole flow through the gateway's one base URL, over real sockets, with
 * real identity, Redis and upstream-mock: login, list users with a key and with a
 * token on both paths, the four inflections, refresh on both paths, 403s, logout.
 */
t.test('the seed flow through the gateway', async (t) => {
  const redis = await startRedis(t)
  const s = await startStack(t, { redis, roles: { reader: ['users:list'] } })
  const { gateway } = s

  const login = await gateway.call('/sessions', { body: { session: ADA } })
  assertJson(t, login, 201, 'login through the gateway')
  t.match(login.body, { token_type: 'Bearer', expires_in: 600, access_token: String, refresh_token: String }, 'a token set')
  const tokens = login.body as { access_token: string, refresh_token: string }

  for (const path of ['/users', '/utilisateurs']) {
    const byToken = await gateway.call(`${path}?per_page=5`, { bearer: tokens.access_token })
    assertJson(t, byToken, 200, `GET ${path} with a token`)
    t.equal(byToken.body.users.length, 5, `${path}: the upstream's page`)
    t.equal(byToken.headers['x-upstream-principal'], s.userId, `${path}: upstream saw the user as principal`)
  }

  const key = await s.createKey(['users:list'])
  for (const path of ['/users', '/utilisateurs']) {
    const byKey = await gateway.call(`${path}?per_page=2`, { headers: { 'x-api-key': key.key } })
    assertJson(t, byKey, 200, `GET ${path} with a key`)
    t.equal(byKey.headers['x-upstream-principal'], key.id, `${path}: upstream saw the key as principal`)
    t.equal(byKey.headers['x-upstream-permissions'], 'users:list', `${path}: and its permissions`)
  }

  // [list, meta, first_name, home_address, postal_code, last_login_at, per_page] in each style
  const expected: Record<string, string[]> = {
    camel: ['users', 'meta', 'firstName', 'homeAddress', 'postalCode', 'lastLoginAt', 'perPage'],
    pascal: ['Users', 'Meta', 'FirstName', 'HomeAddress', 'PostalCode', 'LastLoginAt', 'PerPage'],
    dash: ['users', 'meta', 'first-name', 'home-address', 'postal-code', 'last-login-at', 'per-page'],
    kebab: ['users', 'meta', 'first-name', 'home-address', 'postal-code', 'last-login-at', 'per-page'],
    snake: ['users', 'meta', 'first_name', 'home_address', 'postal_code', 'last_login_at', 'per_page']
  }
  for (const [style, names] of Object.entries(expected)) {
    const [list, meta, first, home, postal, lastLogin, perPage] = names as [string, string, string, string, string, string, string]
    for (const [label, headers] of [['key', { 'x-api-key': key.key }], ['token', { authorization: `Bearer ${tokens.access_token}` }]] as const) {
      const answer = await gateway.call('/users?per_page=1', { headers: { ...headers, 'x-api-inflection': style.toUpperCase() } })
      assertJson(t, answer, 200, `${style} with a ${label}`)
      const user = (answer.body[list] as Array<Record<string, any>> | undefined)?.[0] ?? {}
      t.ok(first in user, `${style}/${label}: ${first}`)
      t.ok(postal in (user[home] ?? {}), `${style}/${label}: nested ${postal}`)
      t.ok(lastLogin in user, `${style}/${label}: ${lastLogin}`)
      t.ok(perPage in (answer.body[meta] ?? {}), `${style}/${label}: ${perPage} in ${meta}`)
      t.match(answer.headers.vary, /x-api-inflection/i, `${style}/${label}: Vary`)
    }
  }
  const plain = await gateway.call('/users?per_page=1', { headers: { 'x-api-key': key.key } })
  t.ok('first_name' in plain.body.users[0], 'without the header the upstream\'s snake_case passes unchanged')
  t.match(plain.headers.vary, /x-api-inflection/i, 'and the answer still says it varies by inflection')
  const unknownStyle = await gateway.call('/users', { headers: { 'x-api-key': key.key, 'x-api-inflection': 'upper' } })
  assertProblem(t, unknownStyle, 400, 'invalid_inflection', 'an unknown inflection')
  t.same(unknownStyle.body.allowed_values, ['camel', 'dash', 'kebab', 'snake', 'pascal'], 'the 400 lists the allowed values')
  t.match(unknownStyle.body.detail, 'camel, dash, kebab, snake, pascal', 'in its detail too')

  for (const path of ['/tokens', '/jetons']) {
    const current = (await gateway.call('/sessions', { body: { session: ADA } })).body
    const refreshed = await gateway.call(path, { bearer: current.access_token, body: { refresh_token: current.refresh_token } })
    assertJson(t, refreshed, 200, `refresh through ${path}`)
    t.not(refreshed.body.refresh_token, current.refresh_token, `${path}: the refresh token rotated`)
    assertJson(t, await gateway.call('/users', { bearer: refreshed.body.access_token }), 200, `${path}: the new access token works`)
  }
  const camelRefresh = (await gateway.call('/sessions', { body: { session: ADA } })).body
  const camel = await gateway.call('/jetons', {
    bearer: camelRefresh.access_token, headers: { 'x-api-inflection': 'camel' }, body: { refreshToken: camelRefresh.refresh_token }
  })
  assertJson(t, camel, 200, 'a camelCase refresh body reaches identity in snake_case')
  t.match(camel.body, { tokenType: 'Bearer', expiresIn: 600, accessToken: String, refreshToken: String }, 'and the token set comes back camelCase')

  const denied = await gateway.call('/tasks', { bearer: tokens.access_token })
  assertProblem(t, denied, 403, 'permission_denied', 'a user without tasks:list')
  t.equal(denied.body.missing_permission, 'tasks:list', 'the 403 names the missing permission')
  t.equal(denied.headers['www-authenticate'], 'Bearer realm="portier", error="insufficient_scope"', 'RFC 6750 insufficient_scope for a token')
  const keyDenied = await gateway.call('/tasks', { headers: { 'x-api-key': key.key } })
  assertProblem(t, keyDenied, 403, 'permission_denied', 'a key without tasks:list')
  t.equal(keyDenied.body.missing_permission, 'tasks:list', 'the 403 names the missing permission for a key')

  const noUsersList = await s.createKey(['tasks:list'])
  assertProblem(t, await gateway.call('/users', { headers: { 'x-api-key': noUsersList.key } }), 403, 'permission_denied', 'a key without users:list')

  assertStatus(t, await gateway.call('/sessions/current', { method: 'DELETE', bearer: tokens.access_token }), 204, 'logout through the gateway')
  const afterLogout = await gateway.call('/users', { bearer: tokens.access_token })
  assertProblem(t, afterLogout, 401, 'invalid_token', 'the logged-out session\'s token')
  t.ok(sidOf(tokens.access_token).length > 0, 'the token named a session')

  const jwks = await gateway.call('/.well-known/jwks.json')
  assertJson(t, jwks, 200, 'JWKS through the gateway')
  for (const path of ['/admin/users', '/internal/keys/verify', '/admin', '/internal']) {
    assertProblem(t, await gateway.call(path, { headers: { authorization: `Bearer ${s.adminToken}` } }), 404, 'not_found', `${path} is never routed`)
  }
})
