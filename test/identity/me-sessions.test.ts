import t from 'tap'
import { assertJson, assertProblem, assertStatus } from '../helpers/assert.js'
import { iso } from '../helpers/identity.js'
import { openSession, sidOf } from '../helpers/session-setup.js'
import { addMember, auditRows, meCall, PASSWORD, startWithMember } from '../helpers/self-service.js'

/**
 * /me/sessions: where a user is logged in, and ending their other sessions with the
 * access token of one. The current session ends by logging out only; another user's
 * session is an unknown one.
 */

t.test('happy: the live sessions, newest first, the current one marked', async (t) => {
  const s = await startWithMember(t)
  const bob = await addMember(t, s, 'bob@example.com', ['reader'])
  s.clock.advance(1_000)
  const phone = await openSession(t, s, s.user, { 'user-agent': 'Phone/2.0' })
  s.clock.advance(1_000)
  const laptop = await openSession(t, s, s.user, { 'user-agent': 'Laptop/1.0' })
  s.clock.advance(1_000)
  const gone = await openSession(t, s, s.user)
  assertStatus(t, await s.logout(gone.access_token), 204, 'a logged-out session is not listed')

  const listed = await meCall(s.publicUrl, laptop.access_token)('GET', '/me/sessions')
  assertJson(t, listed, 200)
  t.equal(listed.headers['cache-control'], 'no-store')
  t.same(listed.body.sessions.map((x: Record<string, unknown>) => x.id), [laptop.sid, phone.sid, s.ada.tokens.sid], 'own live sessions, newest first')
  t.same(listed.body.sessions[0], {
    id: laptop.sid,
    ip_address: '127.0.0.1',
    user_agent: 'Laptop/1.0',
    created_at: iso(s.clock.now() - 1_000),
    last_used_at: iso(s.clock.now() - 1_000),
    expires_at: iso(s.clock.now() - 1_000 + s.config.sessionMaxSeconds * 1000),
    current: true
  })
  t.same(listed.body.sessions.map((x: Record<string, unknown>) => x.current), [true, false, false], 'only the token\'s own session is current')
  t.notOk(listed.text.includes(bob.tokens.sid), 'nobody else\'s sessions')
})

t.test('happy: ending another session of mine: 204, its tokens stop, gateways are told, and it is audited', async (t) => {
  const s = await startWithMember(t)
  const phone = await openSession(t, s, s.user, { 'user-agent': 'Phone/2.0' })
  const ended = await s.ada.me('DELETE', `/me/sessions/${phone.sid}`)
  assertStatus(t, ended, 204)
  t.equal(ended.text, '')
  t.match(await s.session(phone.access_token), { status: 'revoked', revoked_reason: 'user' })
  assertProblem(t, await s.refresh(phone), 401, 'session_revoked', 'its refresh token stops')
  assertProblem(t, await meCall(s.publicUrl, phone.access_token)('GET', '/me'), 401, 'session_revoked', 'and its access token')
  const revokedFeed = await s.admin('GET', '/admin/sessions?user_id=' + s.userId)
  t.ok(revokedFeed.body.sessions.some((x: Record<string, unknown>) => x.id === phone.sid && x.status === 'revoked'))
  t.match(auditRows(s, 'session.revoke'), [{ outcome: 'success', actor_type: 'user', actor_id: s.userId, target_type: 'session', target_id: phone.sid }])
  assertStatus(t, await s.ada.me('DELETE', `/me/sessions/${phone.sid}`), 204, 'ending it again changes nothing')
  t.equal(auditRows(s, 'session.revoke').length, 1, 'and records nothing')
  assertJson(t, await s.ada.me('GET', '/me'), 200, 'the current session goes on')
})

t.test('error: the current session answers 409 session_is_current and stays', async (t) => {
  const s = await startWithMember(t)
  const answer = await s.ada.me('DELETE', `/me/sessions/${s.ada.tokens.sid}`)
  assertProblem(t, answer, 409, 'session_is_current')
  t.equal(answer.headers['cache-control'], 'no-store')
  t.match(await s.session(s.ada.tokens.access_token), { status: 'active' })
  t.same(auditRows(s, 'session.revoke'), [])
})

t.test('error: another user\'s session, or an unknown id, is 404 session_not_found alike, and stays', async (t) => {
  const s = await startWithMember(t)
  const bob = await addMember(t, s, 'bob@example.com', ['reader'])
  const bodies: string[] = []
  for (const [what, id] of [['bob\'s session', bob.tokens.sid], ['an unknown id', 'ses_0000000000000000']] as const) {
    const answer = await s.ada.me('DELETE', `/me/sessions/${id}`)
    assertProblem(t, answer, 404, 'session_not_found', what)
    t.equal(answer.body.detail, `No session has id ${id}.`)
    bodies.push(JSON.stringify({ ...answer.body, detail: answer.body.detail.replace(id, '{id}') }))
  }
  t.equal(bodies[0], bodies[1], 'the same answer')
  t.match(await s.session(bob.tokens.access_token), { status: 'active' }, 'bob\'s session goes on')
  assertProblem(t, await s.ada.me('DELETE', '/me/sessions/not%20an%20id'), 400, 'validation_failed', 'a malformed id')
})

t.test('happy: revoke-others ends every other session of mine, and says how many', async (t) => {
  const s = await startWithMember(t)
  const bob = await addMember(t, s, 'bob@example.com', ['reader'])
  const others = [await openSession(t, s, s.user), await openSession(t, s, s.user), await openSession(t, s, { email: s.user.email, password: PASSWORD })]
  assertStatus(t, await s.logout(others[2]?.access_token as string), 204, 'one already ended: not counted')
  const answer = await s.ada.me('POST', '/me/sessions/revoke-others')
  assertJson(t, answer, 200)
  t.same(answer.body, { revoked: 2 })
  for (const other of others.slice(0, 2)) t.match(await s.session(other.access_token), { status: 'revoked', revoked_reason: 'user' })
  t.match(await s.session(s.ada.tokens.access_token), { status: 'active' }, 'the current one goes on')
  t.match(await s.session(bob.tokens.access_token), { status: 'active' }, 'so do other users\'')
  t.same((await s.ada.me('GET', '/me/sessions')).body.sessions.map((x: Record<string, unknown>) => x.id), [sidOf(s.ada.tokens.access_token)])
  t.same((await s.ada.me('POST', '/me/sessions/revoke-others')).body, { revoked: 0 }, 'again: none left')
  const byUser = auditRows(s, 'session.revoke').filter((row) => (JSON.parse(row.changes ?? '{}') as { after?: { reason?: string } }).after?.reason === 'user')
  t.equal(byUser.length, 2, 'one record per session it ended')
})
