import t from 'tap'
import { assertStatus } from '../helpers/assert.js'
import { START, iso } from '../helpers/identity.js'
import { keyHelpers, startWithAdmin } from '../helpers/session-setup.js'

/**
 * A key with an owner is bounded by that owner when it is used: it verifies only while
 * the owner is active, and with the intersection of its own permissions and the
 * owner's current ones (wildcards narrowed to the other side: common/permissions.ts).
 * The key's own permissions are kept as given: the admin view shows them, and they
 * apply again in full once the owner holds them again. A key of its own is not bounded.
 * The events that make gateways drop such a key are in admin-events.test.ts; the
 * gateways themselves in test/gateway/owner-bound.test.ts.
 */

const PASSWORD = 'correct horse battery'

t.test('an owned key may do what both it and its owner may, for as long as its owner is active', async (t) => {
  const s = await startWithAdmin(t)
  const keys = keyHelpers(t, s)
  const put = async (role: string, permissions: string[]): Promise<void> => {
    assertStatus(t, await s.admin('PUT', `/admin/roles/${role}`, { permissions }), 200, `role ${role}`)
  }
  await put('reader', ['users:*', 'tasks:list'])
  await put('scheduler', ['meetings:read'])
  const created = await s.admin('POST', '/admin/users', { email: 'ada@example.com', password: PASSWORD, roles: ['reader', 'scheduler'] })
  assertStatus(t, created, 201)
  const owner = created.body.user.id as string
  const expiresAt = iso(START + 86_400_000)
  const everything = await keys.create({ name: 'everything', permissions: ['*'], expires_at: expiresAt, owner_user_id: owner })
  const narrow = await keys.create({ name: 'narrow', permissions: ['users:read', 'tasks:*', 'billing:read'], expires_at: expiresAt, owner_user_id: owner })
  const unowned = await keys.create({ name: 'unowned', permissions: ['*'], expires_at: expiresAt })
  const permissionsOf = async (key: string): Promise<unknown> => (await keys.verify(key)).key?.permissions

  t.same(await permissionsOf(everything.key), ['meetings:read', 'tasks:list', 'users:*'], '* with the owner\'s set: the owner\'s set')
  t.same(await permissionsOf(narrow.key), ['tasks:list', 'users:read'],
    'users:read (the owner\'s users:* allows it), tasks:list (its tasks:* allows the owner\'s), not billing:read (the owner lacks it)')
  t.same(await permissionsOf(unowned.key), ['*'], 'a key of its own keeps its permissions whole')
  t.same((await s.admin('GET', `/admin/keys/${narrow.id}`)).body.api_key.permissions, ['billing:read', 'tasks:*', 'users:read'],
    'the admin view shows the key\'s own permissions, as given')

  await put('reader', ['users:list', 'billing:*'])
  t.same(await permissionsOf(everything.key), ['billing:*', 'meetings:read', 'users:list'], 'a role\'s permissions changed: at the next verification')
  t.same(await permissionsOf(narrow.key), ['billing:read'], 'the key\'s billing:read, now that the owner holds billing:*')

  assertStatus(t, await s.admin('PUT', `/admin/users/${owner}/roles`, { roles: ['scheduler'] }), 200)
  t.same(await permissionsOf(everything.key), ['meetings:read'], 'a role taken from the owner')
  t.same(await permissionsOf(narrow.key), [], 'nothing in common: the key verifies, and may do nothing')

  assertStatus(t, await s.admin('POST', `/admin/users/${owner}/disable`), 200)
  t.same(await keys.verify(everything.key), { valid: false, reason: 'disabled' },
    'the owner disabled: the key is refused as a disabled key is (its holder learns nothing of the owner)')
  t.same(await keys.verify(narrow.key), { valid: false, reason: 'disabled' })
  t.match(await keys.verify(unowned.key), { valid: true }, 'a key of its own is not concerned')
  const metrics = await s.admin('GET', '/metrics')
  t.match(metrics.text, /portier_identity_key_verifications_total\{result="owner_disabled"\} 2/, 'counted apart from a disabled key in the metrics')

  assertStatus(t, await s.admin('POST', `/admin/users/${owner}/enable`), 200)
  t.same(await permissionsOf(everything.key), ['meetings:read'], 'the owner enabled again: the key works again, within the owner\'s permissions')
  assertStatus(t, await s.admin('PUT', `/admin/users/${owner}/roles`, { roles: ['reader', 'scheduler'] }), 200)
  t.same(await permissionsOf(narrow.key), ['billing:read'], 'the key\'s own permissions apply again as far as the owner holds them (its users:read is not the owner\'s users:list)')

  assertStatus(t, await s.admin('POST', `/admin/keys/${everything.id}/disable`), 200)
  t.same(await keys.verify(everything.key), { valid: false, reason: 'disabled' }, 'a disabled key is refused whatever its owner')
})

t.test('a disabled owner\'s key answers as a disabled key, whatever else is true of it (expired, its old secret retired)', async (t) => {
  const s = await startWithAdmin(t)
  const keys = keyHelpers(t, s)
  assertStatus(t, await s.admin('PUT', '/admin/roles/reader', { permissions: ['users:*'] }), 200)
  const created = await s.admin('POST', '/admin/users', { email: 'ada@example.com', password: PASSWORD, roles: ['reader'] })
  assertStatus(t, created, 201)
  const owner = created.body.user.id as string
  const shortLived = await keys.create({ name: 'short', permissions: ['users:read'], expires_at: iso(START + 60_000), owner_user_id: owner })
  const rotated = await keys.create({ name: 'rotated', permissions: ['users:read'], expires_at: iso(START + 86_400_000), owner_user_id: owner })
  const unowned = await keys.create({ name: 'unowned', permissions: ['users:read'], expires_at: iso(START + 60_000) })
  assertStatus(t, await s.admin('POST', `/admin/keys/${rotated.id}/rotate`, { grace_seconds: 0 }), 200)
  s.clock.advance(120_000)
  t.same(await keys.verify(unowned.key), { valid: false, reason: 'expired' }, 'a key of its own, expired: expired')
  t.same(await keys.verify(shortLived.key), { valid: false, reason: 'expired' }, 'the owner active: expired, as any key')
  t.same(await keys.verify(rotated.key), { valid: false, reason: 'secret_retired' }, 'the owner active: the old secret is retired, as any key\'s')

  assertStatus(t, await s.admin('POST', `/admin/users/${owner}/disable`), 200)
  t.same(await keys.verify(shortLived.key), { valid: false, reason: 'disabled' }, 'the owner disabled: disabled, as a disabled key that expired answers')
  t.same(await keys.verify(rotated.key), { valid: false, reason: 'disabled' }, 'the owner disabled: disabled, as a disabled key\'s retired secret answers')
  assertStatus(t, await s.admin('POST', `/admin/keys/${unowned.id}/disable`), 200)
  t.same(await keys.verify(unowned.key), { valid: false, reason: 'disabled' }, 'the same answer as a disabled key of its own, expired')
  assertStatus(t, await s.admin('POST', `/admin/keys/${shortLived.id}/revoke`), 200)
  t.same(await keys.verify(shortLived.key), { valid: false, reason: 'revoked' }, 'revoked wins, as for any key')
})
