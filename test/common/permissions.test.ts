import t from 'tap'
import { intersectPermissions, normalizePermissions, PERMISSION_PATTERN, permits } from '../../common/permissions.js'

/** The permission rules identity grants by and the gateway checks by, from their one module. */

t.test('the pattern: resource:action, resource:*, or *', async (t) => {
  const pattern = new RegExp(PERMISSION_PATTERN)
  for (const ok of ['*', 'users:list', 'users:*', 'a:b', 'user_roles:re-read', `${'a'.repeat(64)}:${'b'.repeat(64)}`]) {
    t.ok(pattern.test(ok), `${ok.slice(0, 20)}: accepted`)
  }
  for (const refused of ['', 'users', ':list', 'users:', '*:list', 'Users:list', 'users:List', 'users:list:x', '1users:list',
    'users :list', `${'a'.repeat(65)}:b`, 'users:**']) {
    t.notOk(pattern.test(refused), `${JSON.stringify(refused.slice(0, 20))}: refused`)
  }
})

t.test('normalised: sorted and de-duplicated', async (t) => {
  t.same(normalizePermissions(['users:read', 'tasks:*', 'users:read', 'a:b']), ['a:b', 'tasks:*', 'users:read'])
  t.same(normalizePermissions([]), [])
})

t.test('permits: exact grants and the two wildcards, nothing else', async (t) => {
  t.ok(permits(['users:list'], 'users:list'), 'the permission itself')
  t.ok(permits(['users:*'], 'users:delete'), 'resource:* grants every action on the resource')
  t.ok(permits(['*'], 'billing:read'), '* grants everything')
  t.notOk(permits([], 'users:list'), 'nothing granted')
  t.notOk(permits(['users:list'], 'users:read'), 'another action')
  t.notOk(permits(['users:*'], 'user:list'), 'a wildcard covers its own resource only')
  t.notOk(permits(['users:*'], 'usersx:list'), 'not a resource that merely starts alike')
  t.notOk(permits(['users:list'], 'users:*'), 'an action does not grant the wildcard')
  t.notOk(permits(['users:*'], '*'), 'nor a resource wildcard everything')
})

t.test('intersectPermissions: what both sets grant, wildcards narrowed to the other side', async (t) => {
  t.same(intersectPermissions(['users:list', 'tasks:read'], ['users:list', 'meetings:read']), ['users:list'], 'exact permissions: those in both')
  t.same(intersectPermissions(['users:*'], ['users:read', 'tasks:list']), ['users:read'], 'a resource wildcard keeps the other side\'s actions on it')
  t.same(intersectPermissions(['users:read', 'tasks:list'], ['users:*']), ['users:read'], 'either way round')
  t.same(intersectPermissions(['*'], ['users:*', 'tasks:list']), ['tasks:list', 'users:*'], '* keeps the other side whole')
  t.same(intersectPermissions(['users:*', 'tasks:*'], ['*']), ['tasks:*', 'users:*'])
  t.same(intersectPermissions(['*'], ['*']), ['*'])
  t.same(intersectPermissions(['users:*'], ['users:*']), ['users:*'], 'the same wildcard on both sides stays one')
  t.same(intersectPermissions(['users:*'], ['tasks:*']), [], 'wildcards of different resources share nothing')
  t.same(intersectPermissions(['users:list'], []), [], 'nothing on one side: nothing')
  t.same(intersectPermissions([], ['*']), [])
  t.same(intersectPermissions(['users:*', 'users:read'], ['users:read', 'users:*']), ['users:*', 'users:read'], 'normalised: sorted, once each')

  // The rule itself: a permission is allowed by the intersection exactly when both sets allow it.
  const sets = [['*'], ['users:*'], ['users:read'], ['users:read', 'tasks:*'], ['tasks:list'], []]
  const asked = ['users:read', 'users:list', 'tasks:list', 'tasks:read', 'meetings:read', 'users:*', 'tasks:*', '*']
  for (const a of sets) {
    for (const b of sets) {
      const both = intersectPermissions(a, b)
      for (const p of asked) t.equal(permits(both, p), permits(a, p) && permits(b, p), `${JSON.stringify(a)} ∩ ${JSON.stringify(b)} on ${p}`)
    }
  }
})
