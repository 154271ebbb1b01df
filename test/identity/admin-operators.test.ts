import t, { type Test } from 'tap'
import { ACCESS_TOKEN_TTL_SECONDS } from '../../common/access-token-profile.js'
import { isOperatorPermission } from '../../common/operator-permissions.js'
import { assertJson, assertProblem, assertStatus } from '../helpers/assert.js'
import { http, rawRequest, type HttpAnswer } from '../helpers/http.js'
import { documentPath, recordRoutes, type Document } from '../helpers/openapi.js'
import { makeOperator, type TestOperator } from '../helpers/operators.js'
import { postLogin, postLogout, refreshTokens, startWithAdmin, type AdminSetup } from '../helpers/session-setup.js'

/**
 * Operators are people: on the admin listener, beside the bootstrap admin token, a
 * user's access token opens the /admin routes whose operator permission the user's
 * roles grant now (read from the database at each request). `*` never grants one,
 * `admin:*` grants all. A valid token without the permission is 403 admin_forbidden,
 * naming it, and recorded in the audit trail; any unusable token is 401, as a wrong
 * admin token. The routes are those the running app registered, not a list kept here.
 */

interface AdminRoute { method: string, url: string, permission: string }

/** Every /admin route the app registered, with the operator permission its config names ('' when none). */
function adminRoutesOf (routes: ReturnType<ReturnType<typeof recordRoutes>>): AdminRoute[] {
  return routes
    .filter((r) => r.url.startsWith('/admin/') || r.url === '/admin')
    .flatMap((r) => r.methods.filter((m) => m !== 'HEAD').map((method) => ({
      method,
      url: r.url,
      permission: typeof r.config.operatorPermission === 'string' ? r.config.operatorPermission : ''
    })))
}

/** The route called with placeholder parameters and no body: the credential check answers before any validation. */
async function callRoute (s: AdminSetup, route: AdminRoute, bearer: string): Promise<HttpAnswer> {
  return await http(`${s.adminUrl}${route.url.replace(/:(\w+)/g, 'x_$1')}`, { method: route.method, bearer })
}

const admitted = (answer: HttpAnswer): boolean => answer.status !== 401 && answer.body?.code !== 'admin_forbidden'

/** The app, its /admin routes, and operators of every kind the suite compares. */
async function setup (t: Test) {
  const routesOf = recordRoutes(t)
  const s = await startWithAdmin(t)
  const routes = adminRoutesOf(routesOf(s.identity.adminApp))
  return { s, routes }
}

t.test('every /admin route names an operator permission, documented with its 403 (routes enumerated from the running app)', async (t) => {
  const { s, routes } = await setup(t)
  t.ok(routes.length >= 26, `the /admin routes were found (${routes.length})`)
  const document = (await http(`${s.adminUrl}/openapi.json`)).body as Document
  t.match(document.components?.securitySchemes?.operatorToken, { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' }, 'a bearer scheme for operator tokens')
  for (const route of routes) {
    const label = `${route.method} ${route.url}`
    t.ok(isOperatorPermission(route.permission) && route.permission !== 'admin:*', `${label}: needs ${route.permission || 'nothing'}`)
    const operation = document.paths[documentPath(route.url)]?.[route.method.toLowerCase()]
    t.same(operation?.security, [{ adminCredential: [] }, { operatorToken: [route.permission] }], `${label}: documented as admin token or operator token with it`)
    t.match(operation?.responses[403]?.description, /`admin_forbidden`/, `${label}: documents 403 admin_forbidden`)
  }
})

t.test('who opens what: the admin token and admin:* everything, admin:keys the key routes, * nothing', async (t) => {
  const { s, routes } = await setup(t)
  const everything = await makeOperator(t, s, ['admin:*'])
  const keys = await makeOperator(t, s, ['admin:keys'])
  const upstream = await makeOperator(t, s, ['*'])
  const mixed = await makeOperator(t, s, ['users:list', 'admin:sessions'])

  for (const route of routes) {
    const label = `${route.method} ${route.url}`
    const forbidden = async (who: TestOperator, name: string): Promise<void> => {
      const answer = await callRoute(s, route, who.tokens.access_token)
      assertProblem(t, answer, 403, 'admin_forbidden', `${label} with ${name}`)
      t.equal(answer.body.detail, `This operation requires the ${route.permission} permission.`, `${label} with ${name}: names ${route.permission}`)
    }
    await forbidden(upstream, '*')
    if (route.permission === 'admin:keys') t.ok(admitted(await callRoute(s, route, keys.tokens.access_token)), `${label}: admin:keys is let in`)
    else await forbidden(keys, 'admin:keys')
    if (route.permission === 'admin:sessions') t.ok(admitted(await callRoute(s, route, mixed.tokens.access_token)), `${label}: admin:sessions is let in`)
    else await forbidden(mixed, 'users:list and admin:sessions')
    t.ok(admitted(await callRoute(s, route, everything.tokens.access_token)), `${label}: admin:* is let in`)
    t.ok(admitted(await callRoute(s, route, s.adminToken)), `${label}: the admin token is let in`)
  }
})

t.test('an admin:keys operator manages keys, and is told which permission the users routes need', async (t) => {
  const s = await startWithAdmin(t)
  const operator = await makeOperator(t, s, ['admin:keys'])
  const created = await operator.call('POST', '/admin/keys', { name: 'reporting', permissions: ['users:list'], expires_at: '2026-06-01T00:00:00Z' })
  assertJson(t, created, 201, 'creates a key')
  const id = created.body.api_key.id as string
  assertJson(t, await operator.call('GET', '/admin/keys'), 200, 'lists keys')
  assertJson(t, await operator.call('PATCH', `/admin/keys/${id}`, { permissions: ['users:read'] }), 200, 'changes it')
  assertJson(t, await operator.call('POST', `/admin/keys/${id}/rotate`), 200, 'rotates it')
  const revoked = await operator.call('POST', `/admin/keys/${id}/revoke`)
  assertJson(t, revoked, 200, 'revokes it')
  t.equal(revoked.body.api_key.status, 'revoked')

  const users = await operator.call('GET', '/admin/users')
  assertProblem(t, users, 403, 'admin_forbidden', 'GET /admin/users')
  t.equal(users.body.detail, 'This operation requires the admin:users permission.', 'naming admin:users')
  t.notOk(users.text.includes(operator.tokens.access_token), 'the token is not echoed')
  assertProblem(t, await operator.call('PUT', `/admin/users/${operator.userId}/roles`, { roles: ['admin'] }), 403, 'admin_forbidden',
    'nor may it change its own roles')
})

t.test('the 403 is recorded in the audit trail, naming the user and the route; what an operator changes names them too', async (t) => {
  const s = await startWithAdmin(t)
  const operator = await makeOperator(t, s, ['admin:keys'])
  assertProblem(t, await operator.call('GET', '/admin/users/usr_nobody'), 403, 'admin_forbidden')
  const refusals = await s.admin('GET', `/admin/audit?action=admin.access&actor_id=${operator.userId}`)
  assertJson(t, refusals, 200, 'the audit trail')
  t.match(refusals.body.records, [{
    action: 'admin.access',
    outcome: 'failure',
    error_code: 'admin_forbidden',
    actor: { type: 'user', id: operator.userId },
    target: { type: 'route', id: 'GET /admin/users/:id' },
    source: { ip: '127.0.0.1' }
  }], 'one failure record, the route as its pattern')
  t.equal(refusals.body.records.length, 1, 'exactly one')

  assertJson(t, await operator.call('POST', '/admin/keys', { name: 'by-an-operator', permissions: ['users:list'], expires_at: '2026-06-01T00:00:00Z' }), 201)
  const changes = await s.admin('GET', `/admin/audit?actor_id=${operator.userId}`)
  t.ok(changes.body.records.some((r: { action: string, outcome: string }) => r.action !== 'admin.access' && r.outcome === 'success'),
    'the key creation is recorded as the operator\'s', { records: changes.body.records })
  assertJson(t, await s.admin('POST', '/admin/keys', { name: 'by-the-token', permissions: ['users:list'], expires_at: '2026-06-01T00:00:00Z' }), 201)
  const bootstrap = await s.admin('GET', '/admin/audit?actor_type=admin_token')
  const actors = new Set(bootstrap.body.records.map((r: { actor: { type: string, id: string } }) => `${r.actor.type}/${r.actor.id}`))
  t.same([...actors], ['admin_token/bootstrap'], 'the admin token acts as admin_token/bootstrap')
})

t.test('an operator hands out no operator permission it lacks: not through a user\'s roles, not into a role (recorded); the admin token may', async (t) => {
  const s = await startWithAdmin(t)
  const userAdmin = await makeOperator(t, s, ['admin:users'])
  const roleAdmin = await makeOperator(t, s, ['admin:roles', 'admin:keys'])
  const everything = await makeOperator(t, s, ['admin:*'])
  assertStatus(t, await s.admin('PUT', '/admin/roles/root-ops', { permissions: ['admin:*'] }), 200, 'the admin token makes an admin:* role')
  assertStatus(t, await s.admin('PUT', '/admin/roles/key-ops', { permissions: ['admin:keys', 'tasks:read'] }), 200)
  assertStatus(t, await s.admin('PUT', '/admin/roles/staff', { permissions: ['*'] }), 200)

  const refusals: Array<[TestOperator, string, string, unknown, string]> = [
    [userAdmin, 'PUT', `/admin/users/${userAdmin.userId}/roles`, { roles: [userAdmin.role, 'root-ops'] }, 'admin:*'],
    [userAdmin, 'PUT', `/admin/users/${roleAdmin.userId}/roles`, { roles: ['key-ops'] }, 'admin:keys'],
    [userAdmin, 'POST', '/admin/users', { email: 'new-op@example.com', password: 'a long enough password', roles: ['key-ops'] }, 'admin:keys'],
    [roleAdmin, 'PUT', `/admin/roles/${roleAdmin.role}`, { permissions: ['admin:roles', 'admin:keys', 'admin:users'] }, 'admin:users'],
    [roleAdmin, 'PUT', '/admin/roles/fresh', { permissions: ['admin:*'] }, 'admin:*'],
    [roleAdmin, 'PATCH', '/admin/roles/key-ops', { permissions: ['admin:audit'] }, 'admin:audit']
  ]
  for (const [who, method, path, body, permission] of refusals) {
    const answer = await who.call(method, path, body)
    assertProblem(t, answer, 403, 'permission_not_held', `${method} ${path}`)
    t.match(answer.body.detail, permission, `${method} ${path}: names ${permission}`)
  }
  const roles = await s.admin('GET', `/admin/users/${userAdmin.userId}`)
  t.same(roles.body.user.roles, [userAdmin.role], 'nothing changed')
  assertProblem(t, await s.admin('GET', '/admin/roles/fresh'), 404, 'role_not_found', 'no role was made')
  const recorded = await s.admin('GET', '/admin/audit?outcome=failure&order=oldest')
  const mine = recorded.body.records.filter((r: { error_code: string }) => r.error_code === 'permission_not_held')
  t.equal(mine.length, refusals.length, 'each refusal is recorded as a failure')

  assertStatus(t, await roleAdmin.call('PUT', '/admin/roles/keys-only', { permissions: ['admin:keys'] }), 200, 'a permission it holds may be handed out')
  assertStatus(t, await userAdmin.call('PUT', `/admin/users/${roleAdmin.userId}/roles`, { roles: ['staff'] }), 200, 'upstream permissions are not bounded here')
  assertStatus(t, await everything.call('PUT', `/admin/users/${userAdmin.userId}/roles`, { roles: ['root-ops'] }), 200, 'admin:* may hand out anything')
  assertStatus(t, await s.admin('PUT', `/admin/users/${roleAdmin.userId}/roles`, { roles: ['root-ops'] }), 200, 'the admin token is not bounded')
})

t.test('an operator takes over no account holding an operator permission it lacks: password and enable refused (recorded); the rest allowed', async (t) => {
  const s = await startWithAdmin(t)
  const userAdmin = await makeOperator(t, s, ['admin:users'])
  const boss = await makeOperator(t, s, ['admin:*'])
  const keyAdmin = await makeOperator(t, s, ['admin:keys', 'users:list'])
  const peer = await makeOperator(t, s, ['admin:users', 'tasks:read'])
  const plain = await makeOperator(t, s, ['*'])
  const before = (await s.admin('GET', `/admin/users/${boss.userId}`)).body.user

  for (const target of [boss, keyAdmin]) {
    const refused = await userAdmin.call('PUT', `/admin/users/${target.userId}/password`, { password: 'taken over, at last' })
    assertProblem(t, refused, 403, 'permission_not_held', `the password of ${target.role}`)
    t.match(refused.body.detail, target === boss ? 'admin:*' : 'admin:keys', 'naming what the operator lacks')
    t.notOk(refused.text.includes('taken over'), 'the password is not echoed')
  }
  assertProblem(t, await postLogin(s, { email: boss.email, password: 'taken over, at last' }), 401, 'invalid_credentials', 'the new password does not open the account')
  t.same((await s.admin('GET', `/admin/users/${boss.userId}`)).body.user, before, 'the account is as it was')
  assertJson(t, await boss.call('GET', '/admin/users'), 200, 'its session still works')

  assertStatus(t, await s.admin('POST', `/admin/users/${boss.userId}/disable`), 200, 'the admin token disables it')
  const enable = await userAdmin.call('POST', `/admin/users/${boss.userId}/enable`)
  assertProblem(t, enable, 403, 'permission_not_held', 'enabling it hands admin:* out again')
  t.equal((await s.admin('GET', `/admin/users/${boss.userId}`)).body.user.status, 'disabled', 'it stays disabled')

  const recorded = await s.admin('GET', `/admin/audit?outcome=failure&actor_id=${userAdmin.userId}&order=oldest`)
  t.same(recorded.body.records.map((r: { action: string, error_code: string }) => `${r.action} ${r.error_code}`),
    ['user.password_reset permission_not_held', 'user.password_reset permission_not_held', 'user.enable permission_not_held'], 'each refusal is recorded')

  assertStatus(t, await userAdmin.call('PUT', `/admin/users/${peer.userId}/password`, { password: 'a peer\'s new password' }), 200, 'a user holding no more: allowed')
  assertStatus(t, await userAdmin.call('PUT', `/admin/users/${plain.userId}/password`, { password: 'upstream only password' }), 200, 'upstream permissions are not bounded')
  assertStatus(t, await userAdmin.call('POST', `/admin/users/${keyAdmin.userId}/disable`), 200, 'disabling takes nothing: allowed')
  // Last: a password change ends the operator's own sessions.
  assertStatus(t, await userAdmin.call('PUT', `/admin/users/${userAdmin.userId}/password`, { password: 'my own new password' }), 200, 'its own password')
  assertStatus(t, await s.admin('POST', `/admin/users/${boss.userId}/enable`), 200, 'the admin token is not bounded')
})

t.test('API keys never hold an operator permission: the admin API refuses one on create and change, nothing changes', async (t) => {
  const s = await startWithAdmin(t)
  const operator = await makeOperator(t, s, ['admin:*'])
  for (const [who, call] of [['the admin token', s.admin], ['an admin:* operator', operator.call]] as const) {
    for (const permissions of [['admin:*'], ['admin:keys'], ['users:list', 'admin:audit']]) {
      const created = await call('POST', '/admin/keys', { name: `escalate-${permissions.length}`, permissions })
      assertProblem(t, created, 400, 'validation_failed', `${who} creates ${permissions.join(',')}`)
      t.match(created.body.detail, /admin:\S+ is an operator permission; API keys never administer identity/)
    }
  }
  const key = await s.admin('POST', '/admin/keys', { name: 'plain', permissions: ['users:list'] })
  assertStatus(t, key, 201)
  const id = key.body.api_key.id as string
  assertProblem(t, await operator.call('PATCH', `/admin/keys/${id}`, { permissions: ['admin:users'] }), 400, 'validation_failed', 'a change to one')
  t.same((await s.admin('GET', `/admin/keys/${id}`)).body.api_key.permissions, ['users:list'], 'the key keeps its permissions')
  t.same((await s.admin('GET', '/admin/keys')).body.api_keys.map((k: { name: string }) => k.name), ['plain'], 'no other key was made')
})

t.test('the route that answers decides which credential it takes, however its path is spelt', async (t) => {
  const s = await startWithAdmin(t)
  const encoded = '/%69nternal/sessions/revoked?since=2026-01-01T00:00:00Z'
  assertProblem(t, await rawRequest(s.adminUrl, encoded, { headers: { authorization: `Bearer ${s.adminToken}` } }), 401, 'service_unauthorized',
    'the admin token does not open /internal by an encoded path')
  assertJson(t, await rawRequest(s.adminUrl, encoded, { headers: { authorization: `Bearer ${s.serviceToken}` } }), 200, 'the service token does')
  assertStatus(t, await rawRequest(s.adminUrl, '/%6detrics', { headers: { authorization: `Bearer ${s.serviceToken}` } }), 200, '/metrics too')
  assertProblem(t, await rawRequest(s.adminUrl, '/%61dmin/users', { headers: { authorization: `Bearer ${s.serviceToken}` } }), 401, 'admin_unauthorized',
    'nor the service token an /admin route')
})

t.test('what the database says now wins over the token: role removed, role changed, user disabled, session ended, token expired', async (t) => {
  const s = await startWithAdmin(t)
  const check = async (who: TestOperator, status: number, label: string): Promise<void> => {
    const answer = await who.call('GET', '/admin/keys')
    if (status === 200) assertJson(t, answer, 200, label)
    else assertProblem(t, answer, status, status === 401 ? 'admin_unauthorized' : 'admin_forbidden', label)
  }

  const removed = await makeOperator(t, s, ['admin:keys'])
  await check(removed, 200, 'role held: let in')
  assertStatus(t, await s.admin('PUT', `/admin/users/${removed.userId}/roles`, { roles: [] }), 200, 'role removed')
  await check(removed, 403, 'the next request with the same token: 403')

  const changed = await makeOperator(t, s, ['admin:keys'])
  assertStatus(t, await s.admin('PUT', `/admin/roles/${changed.role}`, { permissions: ['keys:read'] }), 200, 'the role loses admin:keys')
  await check(changed, 403, 'role changed: 403 at once')
  assertStatus(t, await s.admin('PUT', `/admin/roles/${changed.role}`, { permissions: ['admin:*'] }), 200, 'and gains admin:*')
  await check(changed, 200, 'role changed back: let in at once, with the same token')

  const disabled = await makeOperator(t, s, ['admin:*'])
  assertStatus(t, await s.admin('POST', `/admin/users/${disabled.userId}/disable`), 200, 'user disabled')
  await check(disabled, 401, 'disabled user: 401')

  const loggedOut = await makeOperator(t, s, ['admin:*'])
  assertStatus(t, await postLogout(s, loggedOut.tokens.access_token), 204, 'logged out')
  await check(loggedOut, 401, 'logged-out session: 401')

  const revoked = await makeOperator(t, s, ['admin:*'])
  assertStatus(t, await s.admin('DELETE', `/admin/sessions/${revoked.tokens.sid}`), 200, 'session revoked by an admin')
  await check(revoked, 401, 'revoked session: 401')

  const reused = await makeOperator(t, s, ['admin:*'])
  assertStatus(t, await refreshTokens(s, reused.tokens), 200, 'refreshed once')
  s.clock.advance(1_000)
  assertStatus(t, await refreshTokens(s, reused.tokens), 401, 'the spent refresh token again: the session is revoked')
  await check(reused, 401, 'refresh-revoked session: 401')

  const expired = await makeOperator(t, s, ['admin:*'])
  await check(expired, 200, 'fresh token: let in')
  s.clock.advance(ACCESS_TOKEN_TTL_SECONDS * 1000 + 1_000)
  await check(expired, 401, 'expired access token: 401')
})

t.test('no enumeration, and the other credentials keep their places', async (t) => {
  const s = await startWithAdmin(t)
  const operator = await makeOperator(t, s, ['admin:*'])
  const bearer = operator.tokens.access_token
  for (const path of ['/admin/nothing-here', '/admin', '/nothing', '/admin/keys/key_x/frobnicate']) {
    assertProblem(t, await http(`${s.adminUrl}${path}`, { bearer }), 401, 'admin_unauthorized', `${path} with an operator token`)
    assertProblem(t, await http(`${s.adminUrl}${path}`), 401, 'admin_unauthorized', `${path} without a credential`)
  }
  assertProblem(t, await http(`${s.adminUrl}/internal/sessions/revoked`, { bearer }), 401, 'service_unauthorized', '/internal: never an operator token')
  assertProblem(t, await http(`${s.adminUrl}/metrics`, { bearer }), 401, 'admin_unauthorized', '/metrics: admin or service token only')
  const forged = `${bearer.slice(0, -4)}AAAA`
  assertProblem(t, await http(`${s.adminUrl}/admin/keys`, { bearer: forged }), 401, 'admin_unauthorized', 'a token with a broken signature')
  const publicAnswer = await http(`${s.publicUrl}/admin/keys`, { bearer })
  assertProblem(t, publicAnswer, 404, 'not_found', 'the public listener serves no /admin route, whatever the token')
})
