import t from 'tap'
import { startIdentity } from '../helpers/identity.js'
import { adminClient, http } from '../helpers/http.js'

t.test('login, refresh, logout over real sockets', async (t) => {
  const { publicUrl, adminUrl, adminToken } = await startIdentity(t)
  const admin = adminClient(adminUrl, adminToken)
  t.equal((await admin('PUT', '/admin/roles/reader', { permissions: ['users:list'] })).status, 200)
  const created = await admin('POST', '/admin/users', { email: 'ada@example.com', password: 'correct horse battery', roles: ['reader'] })
  t.equal(created.status, 201, created.text)
  const login = await http(`${publicUrl}/sessions`, { body: { session: { email: 'ada@example.com', password: 'correct horse battery' } } })
  t.equal(login.status, 201, login.text)
  t.match(login.body, { token_type: 'Bearer', expires_in: 600, access_token: String, refresh_token: String })
  const refreshed = await http(`${publicUrl}/jetons`, { bearer: login.body.access_token, body: { refresh_token: login.body.refresh_token } })
  t.equal(refreshed.status, 200, refreshed.text)
  const logout = await http(`${publicUrl}/sessions/current`, { method: 'DELETE', bearer: refreshed.body.access_token })
  t.equal(logout.status, 204, logout.text)
})
