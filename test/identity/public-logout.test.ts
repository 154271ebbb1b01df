import t from 'tap'
import { assertProblem, assertStatus } from '../helpers/assert.js'
import { startWithUser } from '../helpers/session-setup.js'

/** DELETE /sessions/current: a user ends their own session with its access token. */

t.test('happy', async (t) => {
  t.test('logout with the Bearer is 204 with no body, and revokes the session', async (t) => {
    const { login, logout, session, clock } = await startWithUser(t)
    const tokens = await login()
    clock.advance(42_000)
    const answer = await logout({ authorization: `Bearer ${tokens.access_token}` })
    assertStatus(t, answer, 204)
    t.equal(answer.text, '')
    t.notOk('content-type' in answer.headers, 'a 204 carries no body type')
    t.match(await session(tokens.access_token), {
      status: 'revoked',
      revoked_reason: 'logout',
      revoked_at: new Date(clock.now()).toISOString()
    })
  })

  t.test('logout works with a refreshed access token', async (t) => {
    const { login, refresh, logout, session } = await startWithUser(t)
    const first = await login()
    const second = await refresh(first)
    t.equal(second.status, 200)
    t.equal((await logout({ authorization: `Bearer ${second.body.access_token as string}` })).status, 204)
    t.match(await session(first.access_token), { status: 'revoked', revoked_reason: 'logout' })
  })

  t.test("logout ends only the caller's session", async (t) => {
    const { login, refresh, logout, session } = await startWithUser(t)
    const laptop = await login()
    const phone = await login()
    t.equal((await logout({ authorization: `Bearer ${laptop.access_token}` })).status, 204)
    t.match(await session(phone.access_token), { status: 'active' })
    t.equal((await refresh(phone)).status, 200)
  })
})

t.test('error', async (t) => {
  t.test('after logout, refresh on /tokens and /jetons is 401 session_revoked', async (t) => {
    const { login, refresh, logout } = await startWithUser(t)
    const tokens = await login()
    t.equal((await logout({ authorization: `Bearer ${tokens.access_token}` })).status, 204)
    for (const path of ['/tokens', '/jetons']) {
      const answer = await refresh(tokens, path)
      assertProblem(t, answer, 401, 'session_revoked')
      t.same(answer.body, {
        type: 'urn:portier:problem:session_revoked',
        title: 'Session revoked',
        status: 401,
        detail: 'This session has been revoked.',
        code: 'session_revoked'
      })
      t.match(answer.headers['www-authenticate'], /^Bearer realm="portier", error="invalid_token"/)
    }
  })

  t.test('a second logout with the same token is 401 session_revoked', async (t) => {
    const { login, logout } = await startWithUser(t)
    const tokens = await login()
    t.equal((await logout({ authorization: `Bearer ${tokens.access_token}` })).status, 204)
    assertProblem(t, await logout({ authorization: `Bearer ${tokens.access_token}` }), 401, 'session_revoked')
  })

  t.test('logout without a Bearer is 401 credentials_missing', async (t) => {
    const { login, logout, session } = await startWithUser(t)
    const tokens = await login()
    const answer = await logout({})
    assertProblem(t, answer, 401, 'credentials_missing')
    t.equal(answer.headers['www-authenticate'], 'Bearer realm="portier"')
    t.match(await session(tokens.access_token), { status: 'active' })
  })
})

t.test('security', async (t) => {
  t.test('the refresh token is not a logout credential', async (t) => {
    const { login, logout, session } = await startWithUser(t)
    const tokens = await login()
    assertProblem(t, await logout({ authorization: `Bearer ${tokens.refresh_token}` }), 401, 'invalid_token')
    t.match(await session(tokens.access_token), { status: 'active' })
  })

  t.test('the admin credential is not a logout credential on the public port', async (t) => {
    const { login, logout, session, adminToken } = await startWithUser(t)
    const tokens = await login()
    assertProblem(t, await logout({ authorization: `Bearer ${adminToken}` }), 401, 'invalid_token')
    t.match(await session(tokens.access_token), { status: 'active' })
  })
})
