import t from 'tap'
import { assertProblem, assertStatus } from '../helpers/assert.js'
import { http } from '../helpers/http.js'
import { keyHelpers } from '../helpers/session-setup.js'
import { auditRows, createOwnKey, daysFrom, startWithMember } from '../helpers/self-service.js'

/**
 * Every /me route takes an access token and nothing else: an API key never manages
 * keys or sessions, whichever way it is presented, and is answered exactly as no
 * credential at all. The token's refusals are those of logout.
 */

const ROUTES: Array<[string, string, unknown]> = [
  ['GET', '/me', undefined],
  ['GET', '/me/keys', undefined],
  ['POST', '/me/keys', { name: 'k', permissions: ['users:list'], expires_at: '2026-01-05T00:00:00.000Z' }],
  ['GET', '/me/keys/{key}', undefined],
  ['GET', '/me/keys/{key}/usage', undefined],
  ['POST', '/me/keys/{key}/rotate', { grace_seconds: 0 }],
  ['POST', '/me/keys/{key}/revoke', undefined],
  ['GET', '/me/sessions', undefined],
  ['DELETE', '/me/sessions/{session}', undefined],
  ['POST', '/me/sessions/revoke-others', undefined]
]

t.test('an API key is refused on every /me route as a missing credential, even beside a valid Bearer', async (t) => {
  const s = await startWithMember(t)
  const { verify } = keyHelpers(t, s)
  const own = await createOwnKey(t, s.ada.me, { name: 'mine', permissions: ['users:list'], expires_at: daysFrom(s.clock, 3) })
  const other = await s.login()
  const bearer = `Bearer ${s.ada.tokens.access_token}`
  for (const [method, template, body] of ROUTES) {
    const path = template.replace('{key}', own.id).replace('{session}', other.sid)
    const send = async (headers: Record<string, string>) =>
      await http(`${s.publicUrl}${path}`, { method, headers, ...(body !== undefined ? { body } : {}) })
    const none = await send({})
    assertProblem(t, none, 401, 'credentials_missing', `${method} ${template}: no credential`)
    t.equal(none.headers['cache-control'], 'no-store', `${method} ${template}: problems are not cached either`)
    for (const [what, headers] of [
      ['x-api-key', { 'x-api-key': own.key }],
      ['x-api-key beside a valid Bearer', { 'x-api-key': own.key, authorization: bearer }],
      ['the key as the Bearer', { authorization: `Bearer ${own.key}` }]
    ] as const) {
      const answer = await send(headers)
      assertProblem(t, answer, 401, 'credentials_missing', `${method} ${template}: ${what}`)
      t.same(answer.body, none.body, `${method} ${template}: ${what} is answered as no credential`)
    }
  }
  t.match(await verify(own.key), { valid: true }, 'the key was neither rotated nor revoked')
  t.match(await s.session(other.access_token), { status: 'active' }, 'the other session was not ended')
  t.equal(auditRows(s, 'key.create').length, 1, 'no key was made')
})

t.test('the access token\'s refusals: malformed, of an ended session, of a disabled user', async (t) => {
  const s = await startWithMember(t)
  for (const [method, template, body] of ROUTES) {
    const path = template.replace('{key}', 'key_0000000000000000').replace('{session}', 'ses_0000000000000000')
    const send = async (authorization: string) =>
      await http(`${s.publicUrl}${path}`, { method, headers: { authorization }, ...(body !== undefined ? { body } : {}) })
    assertProblem(t, await send('Bearer two words'), 401, 'invalid_token', `${method} ${template}: malformed Bearer`)
    assertProblem(t, await send('Bearer eyJub3QiOiJhIHRva2VuIn0.e30.c2ln'), 401, 'invalid_token', `${method} ${template}: not our token`)
  }
  const ended = await s.login()
  assertStatus(t, await s.logout(ended.access_token), 204)
  assertProblem(t, await http(`${s.publicUrl}/me`, { bearer: ended.access_token }), 401, 'session_revoked', 'a logged-out session')
  assertStatus(t, await s.admin('POST', `/admin/users/${s.userId}/disable`), 200)
  assertProblem(t, await s.ada.me('GET', '/me/keys'), 401, 'session_revoked', 'disabling ended the sessions')
})
