import t from 'tap'
import { http } from '../helpers/http.js'
import { startIdentity } from '../helpers/identity.js'

/**
 * Identity says when requests carry forwarding headers it does not use: with
 * IDENTITY_TRUST_PROXY unset, a gateway in front is every client's address for the
 * per-IP login throttle. One warning per peer, never for a trusted hop.
 */

const BAD_LOGIN = { session: { email: 'nobody@example.com', password: 'wrong password' } }

const warningsIn = (logs: Array<Record<string, unknown>>): Array<Record<string, unknown>> =>
  logs.filter((l) => l.level === 40 && String(l.msg).includes('which identity does not use'))

t.test('IDENTITY_TRUST_PROXY unset: one warning per peer, naming the variable', async (t) => {
  const s = await startIdentity(t)
  await http(`${s.publicUrl}/sessions`, { body: BAD_LOGIN })
  t.same(warningsIn(s.logs), [], 'no forwarding header, no warning')
  for (let i = 0; i < 3; i++) await http(`${s.publicUrl}/sessions`, { body: BAD_LOGIN, headers: { 'x-forwarded-for': `203.0.113.${i}` } })
  const warnings = warningsIn(s.logs)
  t.equal(warnings.length, 1, 'once for the peer, not once per request')
  t.match(warnings[0], { peer: '127.0.0.1', headers: ['x-forwarded-for'] })
  t.match(String(warnings[0]?.msg), /IDENTITY_TRUST_PROXY is unset/)
  t.match(String(warnings[0]?.msg), /per-IP login throttling and session records see 127\.0\.0\.1 as the client/)
  t.match(String(warnings[0]?.msg), /add it to IDENTITY_TRUST_PROXY/)
})

t.test('a trusted gateway: X-Forwarded-For is used, no warning; Forwarded alone is still reported', async (t) => {
  const s = await startIdentity(t, { IDENTITY_TRUST_PROXY: 'loopback' })
  await http(`${s.publicUrl}/sessions`, { body: BAD_LOGIN, headers: { 'x-forwarded-for': '203.0.113.5' } })
  t.same(warningsIn(s.logs), [], 'the peer is trusted: its X-Forwarded-For names the client')
  await http(`${s.publicUrl}/sessions`, { body: BAD_LOGIN, headers: { forwarded: 'for=203.0.113.6' } })
  const warnings = warningsIn(s.logs)
  t.equal(warnings.length, 1, 'identity reads X-Forwarded-For only: a Forwarded header is not used')
  t.match(warnings[0], { headers: ['forwarded'] })
  t.match(String(warnings[0]?.msg), /IDENTITY_TRUST_PROXY is "loopback"/)
})

t.test('a trust list that does not name the peer: reported', async (t) => {
  const s = await startIdentity(t, { IDENTITY_TRUST_PROXY: '10.0.0.0/8' })
  await http(`${s.publicUrl}/sessions`, { body: BAD_LOGIN, headers: { 'x-real-ip': '203.0.113.7', 'x-forwarded-for': '203.0.113.7' } })
  t.match(warningsIn(s.logs), [{ peer: '127.0.0.1', headers: ['x-forwarded-for', 'x-real-ip'] }])
})

t.test('IDENTITY_TRUST_PROXY=true: a warning at start that any peer chooses its address', async (t) => {
  const trusting = await startIdentity(t, { IDENTITY_TRUST_PROXY: 'true' })
  t.ok(trusting.logs.some((l) => l.level === 40 && /^IDENTITY_TRUST_PROXY=true believes X-Forwarded-For from any peer/.test(String(l.msg))),
    'a warning names the setting and the risk')
  const listing = await startIdentity(t, { IDENTITY_TRUST_PROXY: '10.0.0.11,10.0.0.12' })
  t.notOk(listing.logs.some((l) => String(l.msg).includes('IDENTITY_TRUST_PROXY=true')), 'a list of gateways: no such warning')
})
