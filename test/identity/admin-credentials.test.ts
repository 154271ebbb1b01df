import t from 'tap'
import { startIdentity } from '../helpers/identity.js'
import { adminClient, http } from '../helpers/http.js'
import { assertJson, assertProblem } from '../helpers/assert.js'

/**
 * The admin listener's two credentials: /admin/* opens with the admin token only,
 * /internal/* with the service token only, and neither group is served on the
 * public listener.
 */

/** Every admin route, with a well-formed body where it takes one (so only the credential can fail). */
const ADMIN_ROUTES: Array<[method: string, path: string, body?: unknown]> = [
  ['GET', '/admin/users'],
  ['POST', '/admin/users', { email: 'mallory@example.com', password: 'mallory password', roles: [] }],
  ['GET', '/admin/users/usr_x'],
  ['PUT', '/admin/users/usr_x/roles', { roles: [] }],
  ['PUT', '/admin/users/usr_x/password', { password: 'another password' }],
  ['POST', '/admin/users/usr_x/disable'],
  ['POST', '/admin/users/usr_x/enable'],
  ['GET', '/admin/users/usr_x/sessions'],
  ['DELETE', '/admin/users/usr_x/sessions'],
  ['GET', '/admin/roles'],
  ['GET', '/admin/roles/ops'],
  ['PUT', '/admin/roles/ops', { permissions: ['*'] }],
  ['DELETE', '/admin/roles/ops'],
  ['GET', '/admin/keys'],
  ['POST', '/admin/keys', { name: 'mallory', permissions: ['*'], expires_at: '2999-01-01T00:00:00Z' }],
  ['GET', '/admin/keys/key_x'],
  ['PATCH', '/admin/keys/key_x', { permissions: ['*'] }],
  ['POST', '/admin/keys/key_x/disable'],
  ['POST', '/admin/keys/key_x/enable'],
  ['POST', '/admin/keys/key_x/revoke'],
  ['POST', '/admin/keys/key_x/rotate'],
  ['GET', '/admin/sessions'],
  ['GET', '/admin/sessions/ses_x'],
  ['DELETE', '/admin/sessions/ses_x'],
  ['GET', '/admin/signing-keys'],
  ['POST', '/admin/signing-keys/rotate']
]

const INTERNAL_ROUTES: Array<[method: string, path: string, body?: unknown]> = [
  ['POST', '/internal/keys/verify', { key: 'ptk_not_a_key' }],
  ['POST', '/internal/keys/usage', {
    batch_id: 'batch_0000000000000000',
    uses: [{ lookup_id: '000000000000', count: 1, last_used_at: '2026-01-01T00:00:00Z', last_route: '/users', last_ip: '127.0.0.1' }]
  }],
  ['POST', '/internal/quotas/usage', {
    batch_id: 'batch_0000000000000000', uses: [{ counter: 'key|monthly|k:key_x', period_start: 0, count: 1 }], read: []
  }],
  ['GET', '/internal/sessions/revoked']
]

t.test('security: /admin/* refuses every request without the admin credential', async (t) => {
  const identity = await startIdentity(t)
  const { adminUrl, adminToken, serviceToken } = identity
  const wrongCredentials: Array<[label: string, authorization: string | undefined]> = [
    ['no Authorization header', undefined],
    ['a wrong token of the same length', `Bearer ${'0'.repeat(adminToken.length)}`],
    ['the admin token with one character less', `Bearer ${adminToken.slice(0, -1)}`],
    ['the admin token with one character more', `Bearer ${adminToken}0`],
    ['the service token', `Bearer ${serviceToken}`],
    ['the admin token under another scheme', `Basic ${adminToken}`],
    ['the admin token without a scheme', adminToken],
    ['an empty Bearer', 'Bearer '],
    ['two Bearer tokens', `Bearer ${adminToken} ${adminToken}`]
  ]
  for (const [method, path, body] of ADMIN_ROUTES) {
    for (const [label, authorization] of wrongCredentials) {
      const answer = await http(`${adminUrl}${path}`, {
        method,
        ...(authorization !== undefined ? { headers: { authorization } } : {}),
        ...(body !== undefined ? { body } : {})
      })
      assertProblem(t, answer, 401, 'admin_unauthorized', `${method} ${path} with ${label}`)
      t.match(answer.headers['www-authenticate'], /^Bearer realm="portier"/, `${method} ${path} with ${label}: 401 names the scheme`)
      // The error never echoes what was presented.
      t.notOk(answer.text.includes(adminToken) || answer.text.includes(serviceToken), `${method} ${path} with ${label}: no credential echoed`)
    }
  }

  // Nothing the refused requests carried was written.
  const admin = adminClient(adminUrl, adminToken)
  t.same((await admin('GET', '/admin/users')).body, { users: [] })
  t.same((await admin('GET', '/admin/roles')).body, { roles: [] })
  t.same((await admin('GET', '/admin/keys')).body, { api_keys: [] })
  t.equal((await admin('GET', '/admin/signing-keys')).body.signing_keys.length, 1, 'the refused rotation did not happen')
})

t.test('happy: the admin credential opens /admin (the Bearer scheme is case-insensitive)', async (t) => {
  const { adminUrl, adminToken } = await startIdentity(t)
  for (const scheme of ['Bearer', 'bearer', 'BEARER']) {
    const answer = await http(`${adminUrl}/admin/roles`, { headers: { authorization: `${scheme} ${adminToken}` } })
    assertJson(t, answer, 200, `${scheme} scheme`)
    t.same(answer.body, { roles: [] })
  }
})

t.test('security: /internal/* opens with the service credential only', async (t) => {
  const { adminUrl, adminToken, serviceToken } = await startIdentity(t)
  for (const [method, path, body] of INTERNAL_ROUTES) {
    const wrongCredentials: Array<[label: string, authorization: string | undefined]> = [
      ['no Authorization header', undefined],
      ['the admin token', `Bearer ${adminToken}`],
      ['the service token with one character more', `Bearer ${serviceToken}x`],
      ['the service token under another scheme', `Basic ${serviceToken}`]
    ]
    for (const [label, authorization] of wrongCredentials) {
      const answer = await http(`${adminUrl}${path}`, {
        method,
        ...(authorization !== undefined ? { headers: { authorization } } : {}),
        ...(body !== undefined ? { body } : {})
      })
      assertProblem(t, answer, 401, 'service_unauthorized', `${method} ${path} with ${label}`)
      t.notOk(answer.text.includes(adminToken) || answer.text.includes(serviceToken), 'no credential echoed')
    }
    const allowed = await http(`${adminUrl}${path}`, { method, bearer: serviceToken, ...(body !== undefined ? { body } : {}) })
    assertJson(t, allowed, 200, `${method} ${path} with the service token`)
  }
})

t.test('security: /admin and /internal are not served on the public listener', async (t) => {
  const { publicUrl, adminToken, serviceToken } = await startIdentity(t)
  for (const [method, path, body] of ADMIN_ROUTES) {
    const answer = await http(`${publicUrl}${path}`, { method, bearer: adminToken, ...(body !== undefined ? { body } : {}) })
    assertProblem(t, answer, 404, 'not_found', `public ${method} ${path}`)
  }
  for (const [method, path, body] of INTERNAL_ROUTES) {
    const answer = await http(`${publicUrl}${path}`, { method, bearer: serviceToken, ...(body !== undefined ? { body } : {}) })
    assertProblem(t, answer, 404, 'not_found', `public ${method} ${path}`)
  }
})

t.test('security: the admin listener does not serve the public routes either', async (t) => {
  const { adminUrl, adminToken } = await startIdentity(t)
  const login = await http(`${adminUrl}/sessions`, { bearer: adminToken, body: { session: { email: 'a@example.com', password: 'whatever1' } } })
  assertProblem(t, login, 404, 'not_found')
})
