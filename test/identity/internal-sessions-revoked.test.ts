import t, { type Test } from 'tap'
import { fakeClock, startIdentity, type TestIdentity } from '../helpers/identity.js'
import { adminClient, http, type HttpAnswer } from '../helpers/http.js'

/**
 * GET /internal/sessions/revoked?since=: how a gateway that starts late learns which
 * sessions were revoked. Without `since`, the last 600 s (an access token's lifetime).
 */

const START = Date.parse('2026-01-01T00:00:00Z')
const SESSION_MAX_MS = 30 * 86_400_000
const PASSWORD = 'correct horse battery'
const iso = (ms: number): string => new Date(ms).toISOString()

function assertProblem (t: Test, answer: HttpAnswer, status: number, code: string, label = code): void {
  t.equal(answer.status, status, `${label}: status ${status}`, { body: answer.text })
  t.match(answer.headers['content-type'], /^application\/problem\+json/, `${label}: problem+json`)
  t.match(answer.body, { type: `urn:portier:problem:${code}`, title: String, status, detail: String, code }, `${label}: ${code}`)
}

interface Setup extends TestIdentity {
  clock: ReturnType<typeof fakeClock>
  admin: ReturnType<typeof adminClient>
  /** Logs the user in and returns the new session's id. */
  openSession: () => Promise<string>
  revoked: (since?: string) => Promise<Record<string, any>>
}

async function setup (t: Test): Promise<Setup> {
  const clock = fakeClock(START)
  const identity = await startIdentity(t, {}, { clock })
  const admin = adminClient(identity.adminUrl, identity.adminToken)
  t.equal((await admin('POST', '/admin/users', { email: 'ada@example.com', password: PASSWORD })).status, 201)
  return {
    ...identity,
    clock,
    admin,
    async openSession () {
      const login = await http(`${identity.publicUrl}/sessions`, { body: { session: { email: 'ada@example.com', password: PASSWORD } } })
      t.equal(login.status, 201, 'status 201', { body: login.text })
      const payload = JSON.parse(Buffer.from(login.body.access_token.split('.')[1], 'base64url').toString()) as { sid: string }
      return payload.sid
    },
    async revoked (since) {
      const query = since !== undefined ? `?since=${encodeURIComponent(since)}` : ''
      const answer = await http(`${identity.adminUrl}/internal/sessions/revoked${query}`, { bearer: identity.serviceToken })
      t.equal(answer.status, 200, 'status 200', { body: answer.text })
      t.match(answer.headers['content-type'], /^application\/json/)
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
