import t from 'tap'
import { START, iso } from '../helpers/identity.js'
import { assertJson, assertProblem, assertStatus } from '../helpers/assert.js'
import { startWithAdmin as setup } from '../helpers/session-setup.js'

/**
 * /admin/roles: a role maps a name to a permission set (`resource:action`,
 * `resource:*`, `*`). PUT creates or replaces; a role still held cannot be deleted.
 */

t.test('happy: PUT creates a role with action, resource-wildcard and global-wildcard permissions', async (t) => {
  const { admin } = await setup(t)
  const created = await admin('PUT', '/admin/roles/support', { permissions: ['users:read', 'tasks:*', 'users:list'] })
  assertJson(t, created, 200)
  t.same(created.body, {
    role: { name: 'support', permissions: ['tasks:*', 'users:list', 'users:read'], policies: [], key_max_lifetime_days: null, created_at: iso(START), updated_at: iso(START) }
  }, 'permissions are stored sorted')

  const root = await admin('PUT', '/admin/roles/root', { permissions: ['*'] })
  assertJson(t, root, 200)
  t.same(root.body.role.permissions, ['*'])

  const names = await admin('PUT', '/admin/roles/a_b-9', { permissions: ['meeting_notes:update', 'audit-log:read', 'x9:y_z-1'] })
  assertJson(t, names, 200, 'digits, dashes and underscores in names')
  const empty = await admin('PUT', '/admin/roles/nobody', { permissions: [] })
  assertJson(t, empty, 200, 'an empty permission set')
  t.same(empty.body.role.permissions, [])
})

t.test('happy: PUT replaces the permissions (no merge) and keeps created_at', async (t) => {
  const { admin, clock } = await setup(t)
  await admin('PUT', '/admin/roles/support', { permissions: ['users:read', 'users:list'] })
  clock.advance(60_000)
  const replaced = await admin('PUT', '/admin/roles/support', { permissions: ['tasks:create'] })
  assertJson(t, replaced, 200)
  t.same(replaced.body, { role: { name: 'support', permissions: ['tasks:create'], policies: [], key_max_lifetime_days: null, created_at: iso(START), updated_at: iso(START + 60_000) } })
  t.same((await admin('GET', '/admin/roles/support')).body, replaced.body, 'the replacement was stored')
})

t.test('error: invalid permission strings are 400 and nothing is written', async (t) => {
  const { admin } = await setup(t)
  const invalid = [
    'users', // no action
    'users:', ':list', 'Users:list', 'users:List', 'users:list:extra', '*:list', 'users:**', '**', 'users:*x',
    ' users:list', 'users:li st', '9users:list', 'users:list\n', '', `users:${'a'.repeat(65)}`, `${'a'.repeat(65)}:read`
  ]
  for (const permission of invalid) {
    const answer = await admin('PUT', '/admin/roles/support', { permissions: ['users:read', permission] })
    assertProblem(t, answer, 400, 'validation_failed', JSON.stringify(permission))
    t.match(answer.body.errors, [{ path: 'body/permissions/1' }], `${JSON.stringify(permission)}: the violation names the item`)
  }
  assertProblem(t, await admin('PUT', '/admin/roles/support', { permissions: 'users:read' }), 400, 'validation_failed', 'not an array')
  assertProblem(t, await admin('PUT', '/admin/roles/support', { permissions: ['users:read', 'users:read'] }), 400, 'validation_failed', 'duplicates')
  assertProblem(t, await admin('PUT', '/admin/roles/support', {}), 400, 'validation_failed', 'no permissions')
  assertProblem(t, await admin('PUT', '/admin/roles/support', { permissions: [], extra: 1 }), 400, 'validation_failed', 'unknown member')
  assertProblem(t, await admin('GET', '/admin/roles/support'), 404, 'role_not_found', 'the role was never created')

  // Longest legal parts (64 characters each side) are accepted: the limit is exact.
  const longest = `${'a'.repeat(64)}:${'b'.repeat(64)}`
  assertJson(t, await admin('PUT', '/admin/roles/support', { permissions: [longest] }), 200, '64:64 characters')
})

t.test('error: invalid role names are 400', async (t) => {
  const { admin } = await setup(t)
  for (const name of ['Support', '9lives', 'has%20space', 'a'.repeat(65)]) {
    assertProblem(t, await admin('PUT', `/admin/roles/${name}`, { permissions: ['*'] }), 400, 'validation_failed', name)
  }
  t.same((await admin('GET', '/admin/roles')).body, { roles: [] })
})

t.test('happy: list (by name) and show', async (t) => {
  const { admin, clock } = await setup(t)
  await admin('PUT', '/admin/roles/writer', { permissions: ['tasks:*'] })
  clock.advance(1_000)
  await admin('PUT', '/admin/roles/admin', { permissions: ['*'] })
  const listed = await admin('GET', '/admin/roles')
  assertJson(t, listed, 200)
  t.same(listed.body, {
    roles: [
      { name: 'admin', permissions: ['*'], policies: [], key_max_lifetime_days: null, created_at: iso(START + 1_000), updated_at: iso(START + 1_000) },
      { name: 'writer', permissions: ['tasks:*'], policies: [], key_max_lifetime_days: null, created_at: iso(START), updated_at: iso(START) }
    ]
  })
  const shown = await admin('GET', '/admin/roles/writer')
  assertJson(t, shown, 200)
  t.same(shown.body, { role: listed.body.roles[1] })
  const missing = await admin('GET', '/admin/roles/ghost')
  assertProblem(t, missing, 404, 'role_not_found')
  t.match(missing.body.detail, /ghost/)
})

t.test('delete: 409 while a user holds the role, 204 once nobody does, 404 when unknown', async (t) => {
  const { admin } = await setup(t)
  await admin('PUT', '/admin/roles/writer', { permissions: ['tasks:*'] })
  await admin('PUT', '/admin/roles/reader', { permissions: ['users:read'] })
  const ada = (await admin('POST', '/admin/users', { email: 'ada@example.com', password: 'correct horse battery', roles: ['writer', 'reader'] })).body.user

  const inUse = await admin('DELETE', '/admin/roles/writer')
  assertProblem(t, inUse, 409, 'role_in_use')
  t.match(inUse.body.detail, /writer/)
  assertJson(t, await admin('GET', '/admin/roles/writer'), 200, 'the role is still there')
  t.match((await admin('GET', `/admin/users/${ada.id as string}`)).body.user, { roles: ['reader', 'writer'], permissions: ['tasks:*', 'users:read'] },
    'and still held')

  await admin('PUT', `/admin/users/${ada.id as string}/roles`, { roles: ['reader'] })
  const deleted = await admin('DELETE', '/admin/roles/writer')
  assertStatus(t, deleted, 204)
  t.equal(deleted.text, '', 'no body')
  assertProblem(t, await admin('GET', '/admin/roles/writer'), 404, 'role_not_found', 'gone')
  assertProblem(t, await admin('DELETE', '/admin/roles/writer'), 404, 'role_not_found', 'deleting twice')
  assertProblem(t, await admin('DELETE', '/admin/roles/ghost'), 404, 'role_not_found', 'never existed')
  t.same((await admin('GET', '/admin/roles')).body.roles.map((r: { name: string }) => r.name), ['reader'])
  assertProblem(t, await admin('PUT', `/admin/users/${ada.id as string}/roles`, { roles: ['writer'] }), 400, 'unknown_role',
    'a deleted role cannot be assigned')
})
