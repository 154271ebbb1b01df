import t, { type Test } from 'tap'
import { START, iso } from '../helpers/identity.js'
import type { HttpAnswer } from '../helpers/http.js'
import { assertJson, assertProblem } from '../helpers/assert.js'
import { openSession, postLogout, refreshTokens, startWithAdmin, type AdminSetup, type SessionTokens, type TokenSet } from '../helpers/session-setup.js'

/**
 * /admin/sessions: ops list sessions (all, or one user's), show one, and revoke one;
 * a revoked session's refresh token stops working at once.
 */

const SESSION_MAX_MS = 30 * 86_400_000
const PASSWORD = 'correct horse battery'

interface Setup extends AdminSetup {
  users: { ada: string, bob: string }
  login: (email: string, userAgent: string) => Promise<SessionTokens>
  refresh: (tokenSet: TokenSet) => Promise<HttpAnswer>
}

async function setup (t: Test): Promise<Setup> {
  const s = await startWithAdmin(t)
  const ada = (await s.admin('POST', '/admin/users', { email: 'ada@example.com', password: PASSWORD })).body.user.id as string
  const bob = (await s.admin('POST', '/admin/users', { email: 'bob@example.com', password: PASSWORD })).body.user.id as string
  return {
    ...s,
    users: { ada, bob },
    login: async (email, userAgent) => await openSession(t, s, { email, password: PASSWORD }, { 'user-agent': userAgent }),
    refresh: async (tokenSet) => await refreshTokens(s, tokenSet)
  }
}

function sessionOf (id: string, userId: string, userAgent: string, createdAt: number) {
  return {
    id,
    user_id: userId,
    ip_address: '127.0.0.1',
    user_agent: userAgent,
    status: 'active',
    created_at: iso(createdAt),
    last_used_at: iso(createdAt),
    expires_at: iso(createdAt + SESSION_MAX_MS),
    revoked_at: null,
    revoked_reason: null
  }
}

t.test('happy: list all sessions (newest first), by user, with a limit; show one', async (t) => {
  const s = await setup(t)
  const one = await s.login('ada@example.com', 'agent-one')
  s.clock.advance(1_000)
  const two = await s.login('bob@example.com', 'agent-two')
  s.clock.advance(1_000)
  const three = await s.login('ada@example.com', 'agent-three')

  const all = await s.admin('GET', '/admin/sessions')
  assertJson(t, all, 200)
  t.same(all.body, {
    sessions: [
      sessionOf(three.sid, s.users.ada, 'agent-three', START + 2_000),
      sessionOf(two.sid, s.users.bob, 'agent-two', START + 1_000),
      sessionOf(one.sid, s.users.ada, 'agent-one', START)
    ]
  })

  const adas = await s.admin('GET', `/admin/sessions?user_id=${s.users.ada}`)
  assertJson(t, adas, 200)
  t.same(adas.body.sessions.map((x: { id: string }) => x.id), [three.sid, one.sid], 'only that user\'s')
  t.same((await s.admin('GET', '/admin/sessions?user_id=usr_nobody')).body, { sessions: [] }, 'a user without sessions')
  t.same((await s.admin('GET', '/admin/sessions?limit=2')).body.sessions.map((x: { id: string }) => x.id), [three.sid, two.sid], 'limit')

  const shown = await s.admin('GET', `/admin/sessions/${two.sid}`)
  assertJson(t, shown, 200)
  t.same(shown.body, { session: sessionOf(two.sid, s.users.bob, 'agent-two', START + 1_000) })

  // A refresh is a use.
  s.clock.advance(5_000)
  assertJson(t, await s.refresh(two), 200)
  t.match((await s.admin('GET', `/admin/sessions/${two.sid}`)).body.session, { last_used_at: iso(START + 7_000), created_at: iso(START + 1_000) })

  for (const query of ['limit=0', 'limit=1001', 'limit=x', 'user_id=bad-id!', 'other=1']) {
    assertProblem(t, await s.admin('GET', `/admin/sessions?${query}`), 400, 'validation_failed', query)
  }
})

t.test('happy: revoking one session ends it and only it', async (t) => {
  const s = await setup(t)
  const target = await s.login('ada@example.com', 'agent-one')
  const sibling = await s.login('ada@example.com', 'agent-two')
  s.clock.advance(1_000)
  const revoked = await s.admin('DELETE', `/admin/sessions/${target.sid}`)
  assertJson(t, revoked, 200)
  t.same(revoked.body, {
    session: { ...sessionOf(target.sid, s.users.ada, 'agent-one', START), status: 'revoked', revoked_at: iso(START + 1_000), revoked_reason: 'admin' }
  })
  assertProblem(t, await s.refresh(target), 401, 'session_revoked', 'its refresh')
  assertProblem(t, await postLogout(s, target.access_token), 401, 'session_revoked',
    'its access token no longer identifies a live session')
  assertJson(t, await s.refresh(sibling), 200, 'the user\'s other session is untouched')

  s.clock.advance(1_000)
  const again = await s.admin('DELETE', `/admin/sessions/${target.sid}`)
  assertJson(t, again, 200, 'revoking twice')
  t.match(again.body.session, { status: 'revoked', revoked_at: iso(START + 1_000), revoked_reason: 'admin' }, 'the first revocation stands')
  t.match((await s.admin('GET', `/admin/sessions/${target.sid}`)).body.session, { status: 'revoked' })
})

t.test('happy: a session past its absolute lifetime shows as expired', async (t) => {
  const s = await setup(t)
  const session = await s.login('ada@example.com', 'agent')
  s.clock.advance(SESSION_MAX_MS)
  t.match((await s.admin('GET', `/admin/sessions/${session.sid}`)).body.session, { status: 'expired', revoked_at: null })
})

t.test('error: an unknown session is 404 session_not_found', async (t) => {
  const s = await setup(t)
  for (const method of ['GET', 'DELETE']) {
    const answer = await s.admin(method, '/admin/sessions/ses_nothere')
    assertProblem(t, answer, 404, 'session_not_found', method)
    t.match(answer.body.detail, /ses_nothere/)
  }
  assertProblem(t, await s.admin('GET', '/admin/sessions/bad-id!'), 400, 'validation_failed', 'a malformed id')
})
