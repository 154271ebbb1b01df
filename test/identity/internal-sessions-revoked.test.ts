import t, { type Test } from 'tap'
import { START, iso } from '../helpers/identity.js'
import { http } from '../helpers/http.js'
import { assertJson, assertProblem, assertStatus } from '../helpers/assert.js'
import { openSession, startWithAdmin, type AdminSetup } from '../helpers/session-setup.js'

/**
 * GET /internal/sessions/revoked?since=: how a gateway that starts late learns which
 * sessions were revoked. Without `since`, the last 600 s (an access token's lifetime).
 */

const SESSION_MAX_MS = 30 * 86_400_000
const PASSWORD = 'correct horse battery'

interface Setup extends AdminSetup {
  /** Logs the user in and returns the new session's id. */
  openSession: () => Promise<string>
  revoked: (since?: string) => Promise<Record<string, any>>
}

async function setup (t: Test): Promise<Setup> {
  const s = await startWithAdmin(t)
  const ada = { email: 'ada@example.com', password: PASSWORD }
  assertStatus(t, await s.admin('POST', '/admin/users', ada), 201, 'user created')
  return {
    ...s,
    openSession: async () => (await openSession(t, s, ada)).sid,
    async revoked (since) {
      const query = since !== undefined ? `?since=${encodeURIComponent(since)}` : ''
      const answer = await http(`${s.adminUrl}/internal/sessions/revoked${query}`, { bearer: s.serviceToken })
      assertJson(t, answer, 200, 'revoked sessions')
      return answer.body
    }
  }
}

t.test('happy: sessions revoked since a time, oldest first, with revoked_at and expires_at', async (t) => {
  const s = await setup(t)
  const early = await s.openSession()
  const a = await s.openSession()
  s.clock.advance(1_000)
  const b = await s.openSession()
  const live = await s.openSession()

  t.equal((await s.admin('DELETE', `/admin/sessions/${early}`)).status, 200)
  s.clock.advance(1_000) // START + 2 s
  t.equal((await s.admin('DELETE', `/admin/sessions/${b}`)).status, 200)
  s.clock.advance(1_000) // START + 3 s
  t.equal((await s.admin('DELETE', `/admin/sessions/${a}`)).status, 200)

  t.same(await s.revoked(iso(START + 2_000)), {
    now: iso(START + 3_000),
    sessions: [
      { id: b, revoked_at: iso(START + 2_000), expires_at: iso(START + 1_000 + SESSION_MAX_MS) },
      { id: a, revoked_at: iso(START + 3_000), expires_at: iso(START + SESSION_MAX_MS) }
    ]
  }, '`since` is inclusive; earlier revocations and live sessions are left out')
  const everything = (await s.revoked(iso(START))).sessions.map((x: { id: string }) => x.id)
  t.same(everything, [early, b, a])
  t.notOk(everything.includes(live), 'a live session is never listed')
  t.same((await s.revoked(iso(START + 3_001))).sessions, [], 'nothing after the last revocation')
  // A gateway pages by passing the last revoked_at it saw.
  t.same((await s.revoked(iso(START + 3_000))).sessions.map((x: { id: string }) => x.id), [a])
  // Offsets are accepted in `since`.
  t.same((await s.revoked('2026-01-01T01:00:02+01:00')).sessions.map((x: { id: string }) => x.id), [b, a])
})

t.test('default window: the last 600 s', async (t) => {
  const s = await setup(t)
  const sid = await s.openSession()
  t.equal((await s.admin('DELETE', `/admin/sessions/${sid}`)).status, 200)
  const entry = { id: sid, revoked_at: iso(START), expires_at: iso(START + SESSION_MAX_MS) }
  t.same(await s.revoked(), { now: iso(START), sessions: [entry] }, 'just revoked')
  s.clock.advance(600_000)
  t.same(await s.revoked(), { now: iso(START + 600_000), sessions: [entry] }, 'exactly 600 s later')
  s.clock.advance(1)
  t.same(await s.revoked(), { now: iso(START + 600_001), sessions: [] }, 'beyond 600 s: its access tokens have all expired')
  t.same((await s.revoked(iso(START))).sessions, [entry], 'an explicit `since` still finds it')
})

t.test('every way of ending a session is reported', async (t) => {
  const s = await setup(t)
  const user = (await s.admin('GET', '/admin/users')).body.users[0]
  const byAdmin = await s.openSession()
  const byUserRevocation = await s.openSession()
  t.equal((await s.admin('DELETE', `/admin/sessions/${byAdmin}`)).status, 200)
  t.equal((await s.admin('DELETE', `/admin/users/${user.id as string}/sessions`)).status, 200)
  const byPassword = await s.openSession()
  t.equal((await s.admin('PUT', `/admin/users/${user.id as string}/password`, { password: 'another passphrase' })).status, 200)
  t.same((await s.revoked()).sessions.map((x: { id: string }) => x.id).sort(), [byAdmin, byUserRevocation, byPassword].sort())
})

t.test('error: bad `since` and credentials', async (t) => {
  const s = await setup(t)
  for (const since of ['yesterday', '2026-01-01', '1767225600000', '']) {
    const answer = await http(`${s.adminUrl}/internal/sessions/revoked?since=${encodeURIComponent(since)}`, { bearer: s.serviceToken })
    assertProblem(t, answer, 400, 'validation_failed', `since=${since}`)
  }
  assertProblem(t, await http(`${s.adminUrl}/internal/sessions/revoked?until=x`, { bearer: s.serviceToken }), 400, 'validation_failed', 'unknown parameter')
  assertProblem(t, await http(`${s.adminUrl}/internal/sessions/revoked`), 401, 'service_unauthorized', 'no credential')
  assertProblem(t, await http(`${s.adminUrl}/internal/sessions/revoked`, { bearer: s.adminToken }), 401, 'service_unauthorized', 'the admin token')
})
