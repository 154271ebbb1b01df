import t from 'tap'
import { startIdentity } from '../helpers/identity.js'
import { adminClient, http } from '../helpers/http.js'
import { assertStatus } from '../helpers/assert.js'

t.test('login, refresh, logout over real sockets', async (t) => {
  const { publicUrl, adminUrl, adminToken } = await startIdentity(t)
  const admin = adminClient(adminUrl, adminToken)
  t.equal((await admin('PUT', '/admin/roles/reader', { permissions: ['users:list'] })).status, 200)
  const created = await admin('POST', '/admin/users', { email: 'ada@example.com', password: 'correct horse battery', roles: ['reader'] })
  assertStatus(t, created, 201)
  const login = await http(`${publicUrl}/sessions`, { body: { session: { email: 'ada@example.com', password: 'correct horse battery' } } })
  assertStatus(t, login, 201)
  t.match(login.body, { token_type: 'Bearer', expires_in: 600, access_token: String, refresh_token: String })
  const refreshed = await http(`${publicUrl}/jetons`, { bearer: login.body.access_token, body: { refresh_token: login.body.refresh_token } })
  assertStatus(t, refreshed, 200)
  const logout = await http(`${publicUrl}/sessions/current`, { method: 'DELETE', bearer: refreshed.body.access_token })
  assertStatus(t, logout, 204)
})
