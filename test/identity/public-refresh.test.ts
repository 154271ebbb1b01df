import t, { type Test } from 'tap'
import { decodeJwt } from 'jose'
import type { HttpAnswer } from '../helpers/http.js'
import { PROBLEM_JSON, assertJson, assertProblem, assertStatus } from '../helpers/assert.js'
import { startWithUser as startWithAda, type SessionTokens, type UserSetup } from '../helpers/session-setup.js'

/**
 * POST /tokens and POST /jetons: rotation on every use, reuse detection that revokes
 * the session (RFC 9700 §4.14.2), the optional grace window for concurrent clients,
 * exactly one winner among concurrent refreshes, and the idle and absolute lifetimes.
 */

const REFRESH_PATHS = ['/tokens', '/jetons'] as const

/** Ada holds `reader` (users:list); the session look-ups are checked. */
async function startWithUser (t: Test, env: Record<string, string> = {}): Promise<UserSetup> {
  return await startWithAda(t, { env, checkLookups: true })
}

t.test('happy', async (t) => {
  for (const path of REFRESH_PATHS) {
    t.test(`POST ${path} returns a new token set for the same session`, async (t) => {
      const { login, refresh, clock } = await startWithUser(t)
      const first = await login()
      clock.advance(30_000)
      const answer = await refresh(first.access_token, first.refresh_token, path)
      assertJson(t, answer, 200)
      t.equal(answer.headers['cache-control'], 'no-store')
      t.same(Object.keys(answer.body).sort(), ['access_token', 'expires_in', 'refresh_token', 'token_type'])
      t.match(answer.body, { token_type: 'Bearer', expires_in: 600, access_token: String, refresh_token: /^prt_[0-9A-Za-z]{43}$/ })
      t.not(answer.body.refresh_token, first.refresh_token, 'the refresh token rotated')
      t.not(answer.body.access_token, first.access_token)
      const before = decodeJwt(first.access_token)
      const after = decodeJwt(answer.body.access_token)
      t.equal(after.sid, before.sid, 'same session')
      t.equal(after.sub, before.sub)
      t.not(after.jti, before.jti)
      t.equal(after.iat, clock.now() / 1000)
      t.equal((after.exp as number) - (after.iat as number), 600)
    })
  }

  t.test('the refresh token rotates on every use; each one works exactly once', async (t) => {
    const { login, refresh, session } = await startWithUser(t)
    let current = await login()
    const seen = new Set([current.refresh_token])
    for (const path of ['/tokens', '/jetons', '/tokens', '/jetons']) {
      const answer = await refresh(current.access_token, current.refresh_token, path)
      assertStatus(t, answer, 200)
      t.notOk(seen.has(answer.body.refresh_token), 'a refresh token never seen before')
      seen.add(answer.body.refresh_token)
      current = answer.body
    }
    t.match(await session(current.access_token), { status: 'active', revoked_at: null })

    t.test('error: the previous refresh token stopped working', async (t) => {
      const previous = [...seen].at(-2) as string
      assertProblem(t, await refresh(current.access_token, previous), 401, 'refresh_token_reused')
    })
  })

  t.test('a refresh records the session as used', async (t) => {
    const { login, refresh, session, clock } = await startWithUser(t)
    const first = await login()
    clock.advance(120_000)
    t.equal((await refresh(first.access_token, first.refresh_token)).status, 200)
    t.match(await session(first.access_token), { last_used_at: new Date(clock.now()).toISOString(), created_at: '2026-01-01T00:00:00.000Z' })
  })

  t.test('a refreshed access token carries the permissions the roles have now', async (t) => {
    const { login, refresh, admin } = await startWithUser(t)
    const first = await login()
    t.same(decodeJwt(first.access_token).permissions, ['users:list'])
    t.equal((await admin('PUT', '/admin/roles/reader', { permissions: ['users:list', 'users:read'] })).status, 200)
    const answer = await refresh(first.access_token, first.refresh_token)
    assertStatus(t, answer, 200)
    t.same(decodeJwt(answer.body.access_token).permissions, ['users:list', 'users:read'])
  })
})

t.test('error', async (t) => {
  t.test('an unknown refresh token is 401 refresh_token_invalid', async (t) => {
    const { login, refresh, session } = await startWithUser(t)
    const first = await login()
    const answer = await refresh(first.access_token, 'prt_' + 'x'.repeat(43))
    assertProblem(t, answer, 401, 'refresh_token_invalid')
    t.equal(answer.headers['www-authenticate'], 'Bearer realm="portier"')
    t.match(await session(first.access_token), { status: 'active' })
  })

  t.test('refresh idle lifetime: a refresh token unused for IDENTITY_REFRESH_IDLE_SECONDS expires', async (t) => {
    const { login, refresh, clock, session } = await startWithUser(t, { IDENTITY_REFRESH_IDLE_SECONDS: '3600' })
    const first = await login()
    clock.advance(3_599_000)
    const kept = await refresh(first.access_token, first.refresh_token)
    t.equal(kept.status, 200, 'one second before the idle limit it works, and the new token starts a new idle period')
    clock.advance(3_599_000)
    const again = await refresh(kept.body.access_token, kept.body.refresh_token)
    assertStatus(t, again, 200)
    clock.advance(3_600_000)
    const expired = await refresh(again.body.access_token, again.body.refresh_token)
    assertProblem(t, expired, 401, 'refresh_token_expired')
    t.same(expired.body, {
      type: 'urn:portier:problem:refresh_token_expired',
      title: 'Refresh token expired',
      status: 401,
      detail: 'The refresh token has expired; log in again.',
      code: 'refresh_token_expired'
    })
    t.match(await session(first.access_token), { revoked_at: null }, 'an idle expiry is not a revocation')
  })

  t.test('absolute session lifetime: IDENTITY_SESSION_MAX_SECONDS ends the session however often it refreshes', async (t) => {
    const { login, refresh, clock, session } = await startWithUser(t, { IDENTITY_SESSION_MAX_SECONDS: '1800', IDENTITY_REFRESH_IDLE_SECONDS: '3600' })
    const first = await login()
    clock.advance(1_000_000)
    const middle = await refresh(first.access_token, first.refresh_token)
    assertStatus(t, middle, 200)
    clock.advance(799_000)
    const last = await refresh(middle.body.access_token, middle.body.refresh_token)
    t.equal(last.status, 200, 'one second before the absolute limit it still works')
    clock.advance(1_000)
    const ended = await refresh(last.body.access_token, last.body.refresh_token)
    assertProblem(t, ended, 401, 'session_expired')
    t.match(ended.headers['www-authenticate'], /error="invalid_token"/)
    t.match(await session(first.access_token), { status: 'expired', expires_at: '2026-01-01T00:30:00.000Z' })
  })

  t.test('a user disabled after login cannot refresh', async (t) => {
    const { login, refresh, admin, userId, session } = await startWithUser(t)
    const first = await login()
    t.equal((await admin('POST', `/admin/users/${userId}/disable`)).status, 200)
    t.match(await session(first.access_token), { status: 'revoked', revoked_reason: 'user_disabled' })
    // Disabling ends every session of the user (a disabled user keeps no way in), so the session is what is refused.
    assertProblem(t, await refresh(first.access_token, first.refresh_token), 401, 'session_revoked')
  })
})

t.test('security: reuse detection', async (t) => {
  t.test('reusing a rotated refresh token is 401 refresh_token_reused and revokes the whole session', async (t) => {
    const { login, refresh, logout, session } = await startWithUser(t)
    const other = await login()
    const first = await login()
    const second = await refresh(first.access_token, first.refresh_token)
    t.equal(second.status, 200)
    const third = await refresh(second.body.access_token, second.body.refresh_token, '/jetons')
    t.equal(third.status, 200)

    // Same fake instant as the rotation: with no grace window every reuse counts.
    const reused = await refresh(third.body.access_token, first.refresh_token)
    assertProblem(t, reused, 401, 'refresh_token_reused')
    t.same(reused.body, {
      type: 'urn:portier:problem:refresh_token_reused',
      title: 'Refresh token reused',
      status: 401,
      detail: 'This refresh token was already used; the session has been revoked.',
      code: 'refresh_token_reused'
    })

    const newest = await refresh(third.body.access_token, third.body.refresh_token)
    assertProblem(t, newest, 401, 'session_revoked')
    t.match(newest.headers['www-authenticate'], /error="invalid_token"/)
    assertProblem(t, await logout(third.body.access_token), 401, 'session_revoked')
    t.match(await session(first.access_token), { status: 'revoked', revoked_reason: 'refresh_token_reuse', revoked_at: String })

    t.test("the user's other sessions are untouched", async (t) => {
      t.match(await session(other.access_token), { status: 'active' })
      t.equal((await refresh(other.access_token, other.refresh_token)).status, 200)
    })
  })

  t.test('reuse is detected on /jetons as on /tokens, with a later clock', async (t) => {
    const { login, refresh, clock, session } = await startWithUser(t)
    const first = await login()
    const second = await refresh(first.access_token, first.refresh_token, '/tokens')
    t.equal(second.status, 200)
    clock.advance(5_000)
    assertProblem(t, await refresh(first.access_token, first.refresh_token, '/jetons'), 401, 'refresh_token_reused')
    t.match(await session(first.access_token), { status: 'revoked', revoked_reason: 'refresh_token_reuse' })
  })

  t.test('with IDENTITY_REFRESH_REUSE_GRACE_SECONDS=10', async (t) => {
    const { login, refresh, clock, session, logout } = await startWithUser(t, { IDENTITY_REFRESH_REUSE_GRACE_SECONDS: '10' })
    const first = await login()
    const winner = await refresh(first.access_token, first.refresh_token)
    t.equal(winner.status, 200)

    t.test('a reuse within the window is 401 refresh_token_superseded and does not revoke', async (t) => {
      clock.advance(10_000)
      const late = await refresh(first.access_token, first.refresh_token)
      assertProblem(t, late, 401, 'refresh_token_superseded')
      t.match(await session(first.access_token), { status: 'active', revoked_at: null })
    })

    let next: SessionTokens
    t.test("the winner's new refresh token still works", async (t) => {
      const answer = await refresh(winner.body.access_token, winner.body.refresh_token)
      assertStatus(t, answer, 200)
      next = answer.body
    })

    t.test('a reuse after the window revokes the session', async (t) => {
      clock.advance(10_001)
      assertProblem(t, await refresh(winner.body.access_token, winner.body.refresh_token), 401, 'refresh_token_reused')
      assertProblem(t, await refresh(next.access_token, next.refresh_token), 401, 'session_revoked')
      assertProblem(t, await logout(next.access_token), 401, 'session_revoked')
      t.match(await session(first.access_token), { status: 'revoked', revoked_reason: 'refresh_token_reuse' })
    })
  })
})

t.test('security: concurrent refreshes of one refresh token', async (t) => {
  for (const count of [2, 50]) {
    t.test(`${count} at once: exactly one wins; the others are refused as reuse`, async (t) => {
      const { login, refresh, session } = await startWithUser(t)
      const first = await login()
      const answers = await Promise.all(Array.from({ length: count }, (_, i) =>
        refresh(first.access_token, first.refresh_token, REFRESH_PATHS[i % 2])))
      const winners = answers.filter((a) => a.status === 200)
      t.equal(winners.length, 1, 'exactly one 200')
      const losers = answers.filter((a) => a.status !== 200)
      t.equal(losers.length, count - 1)
      for (const loser of losers) {
        assertStatus(t, loser, 401)
        t.equal(loser.headers['content-type'], PROBLEM_JSON)
        t.match(loser.body.code, /^(refresh_token_reused|session_revoked)$/)
      }
      t.ok(losers.some((l) => l.body.code === 'refresh_token_reused'), 'the reuse was detected')
      // With no grace window, a second use is a reuse: the session is revoked.
      t.match(await session(first.access_token), { status: 'revoked', revoked_reason: 'refresh_token_reuse' })
    })
  }

  t.test('50 at once with a grace window: one wins, 49 superseded, the session lives on', async (t) => {
    const { login, refresh, session } = await startWithUser(t, { IDENTITY_REFRESH_REUSE_GRACE_SECONDS: '10' })
    const first = await login()
    const answers = await Promise.all(Array.from({ length: 50 }, (_, i) =>
      refresh(first.access_token, first.refresh_token, REFRESH_PATHS[i % 2])))
    const winners = answers.filter((a) => a.status === 200)
    t.equal(winners.length, 1, 'exactly one 200')
    const codes = answers.filter((a) => a.status !== 200).map((a) => `${a.status} ${String(a.body.code)}`)
    t.same(codes, Array.from({ length: 49 }, () => '401 refresh_token_superseded'))
    t.match(await session(first.access_token), { status: 'active' })
    const winner = winners[0] as HttpAnswer<SessionTokens>
    t.equal((await refresh(winner.body.access_token, winner.body.refresh_token)).status, 200, "the winner's token set works")
  })
})
