import t from 'tap'
import type { KeyUsage, OwnKey } from '../../console/identity-client.js'
import { keysPage } from '../../console/pages/keys.js'
import { Browser, csrfOf, startConsole, tokensOf, type PageAnswer } from '../helpers/console.js'
import { pollUntil } from '../helpers/gateway-auth.js'
import { startStack } from '../helpers/gateway.js'
import { http } from '../helpers/http.js'

/**
 * My keys' "Last 7 days" column, through the gateway against a real identity: a key's
 * requests counted at the gateway show as a sparkline named with their number, a key
 * never used says 0, a revoked key is not asked about and does not break the page.
 */

/** The text that names a key's sparkline (its SVG title, which the SVG is labelled by). */
function sparklineTextOf (page: PageAnswer, keyId: string): string | null {
  const svg = new RegExp(`<svg class="sparkline"[^>]* role="img" aria-labelledby="recent-${keyId}-title">\\s*<title id="recent-${keyId}-title">([^<]*)</title>`).exec(page.text)
  return svg?.[1] ?? null
}

/** The cells of the row whose name links to the key. */
function rowOf (page: PageAnswer, keyId: string): string {
  return new RegExp(`<tr>\\s*<th scope="row"><a href="/console/keys/${keyId}">[\\s\\S]*?</tr>`).exec(page.text)?.[0] ?? ''
}

t.test('My keys: each live key\'s last 7 days as a named sparkline', async (t) => {
  const s = await startStack(t, { env: { IDENTITY_TRUST_PROXY: '127.0.0.1' } })
  const console = await startConsole(t, { identityPublicUrl: s.publicUrl, identityAdminUrl: s.adminUrl, now: s.clock.now })
  // Usage reaches identity when the gateway flushes its counts: every 0.2 s here.
  const gateway = await s.addGateway({ consoleUrl: console.url, keyUsageFlushSeconds: 0.2 })
  const browser = new Browser(gateway.url)
  const form = await browser.get('/console/sign-in')
  t.equal((await browser.post('/console/sign-in', { _csrf: csrfOf(form), email: s.user.email, password: s.user.password })).status, 303, 'signed in')

  // The user's own keys, made at identity as the console would make them.
  const { access } = tokensOf(console, browser)
  const makeKey = async (name: string): Promise<{ id: string, secret: string }> => {
    const made = await http(`${s.publicUrl}/me/keys`, { bearer: access, body: { name, permissions: ['users:list'], expires_at: new Date(s.clock.now() + 30 * 86_400_000).toISOString() } })
    t.equal(made.status, 201, `key ${name} made`)
    return { id: made.body.api_key.id, secret: made.body.key }
  }
  const used = await makeKey('used')
  const idle = await makeKey('idle')
  const revoked = await makeKey('revoked')
  t.equal((await http(`${s.publicUrl}/me/keys/${revoked.id}/revoke`, { method: 'POST', bearer: access })).status, 200, 'one key revoked')

  const calls = 3
  for (let i = 0; i < calls; i++) t.equal((await gateway.call('/users?per_page=1', { headers: { 'x-api-key': used.secret } })).status, 200, 'a call with the used key')

  let page = await browser.get('/console/keys')
  const counted = await pollUntil(async () => {
    page = await browser.get('/console/keys')
    return sparklineTextOf(page, used.id)?.startsWith(`${calls} requests`) === true
  }, { timeoutMs: 10_000, intervalMs: 200 })
  t.ok(counted !== null, 'the calls reach My keys')
  t.equal(page.status, 200, 'the page opens with a revoked key among the keys')
  t.match(page.text, /<th scope="col">Last used<\/th><th scope="col">Last 7 days<\/th><th scope="col">Status<\/th>/, 'a "Last 7 days" column')
  t.notMatch(page.text, /style="|<script>/, 'nothing inline for the CSP')

  t.match(sparklineTextOf(page, used.id), new RegExp(`^${calls} requests in the last 7 days, most on \\d{4}-\\d{2}-\\d{2} \\(${calls}\\)$`), 'the used key: its number of requests and its busiest day')
  t.match(rowOf(page, used.id), /<polyline points="[\d., ]+" fill="none" stroke="#0b57d0"/, 'drawn as a line with presentation attributes')
  t.match(rowOf(page, used.id), new RegExp(`<span class="spark-total" aria-hidden="true">${calls}</span>`), 'its total beside it')
  t.equal(sparklineTextOf(page, idle.id), '0 requests in the last 7 days', 'the idle key says 0')
  const revokedRow = rowOf(page, revoked.id)
  t.notMatch(revokedRow, /<svg/, 'no sparkline for the revoked key')
  t.match(revokedRow, /<span aria-hidden="true">—<\/span><span class="visually-hidden">not in use<\/span>/, 'a dash, said as "not in use"')
  t.equal(new Set([...page.text.matchAll(/ id="([^"]+)"/g)].map((m) => m[1])).size, [...page.text.matchAll(/ id="([^"]+)"/g)].length, 'every id on the page is unique')

  const detail = await browser.get(`/console/keys/${used.id}?range=7d`)
  t.match(detail.text, new RegExp(`aria-label="Requests with this key, the last 7 days, per day: ${calls} requests`), 'the key\'s own page counts the same 7 days alike')
})

t.test('a key whose usage identity could not give says so in its row; the others are drawn', async (t) => {
  const now = Date.parse('2024-05-10T12:00:00Z')
  const key = (id: string): OwnKey => ({ id, name: id, key_prefix: 'pk_x', key_last4: null, permissions: ['users:list'], status: 'active', rotation: null, expires_at: null, created_at: '2024-05-01T00:00:00Z', last_used_at: null, last_used_route: null, last_used_ip: null })
  const zero = { allowed: 0, forbidden: 0, rate_limited: 0, quota_exhausted: 0, upstream_error: 0, total: 0 }
  const usage: KeyUsage = {
    step: 'day',
    from: '2024-05-03T00:00:00Z',
    to: '2024-05-11T00:00:00Z',
    buckets: [{ ...zero, start: '2024-05-08T00:00:00Z', allowed: 2, total: 2 }, { ...zero, start: '2024-05-09T00:00:00Z', allowed: 5, total: 5 }, { ...zero, start: '2024-05-10T00:00:00Z', allowed: 5, forbidden: 1, total: 6 }],
    totals: { ...zero, allowed: 12, forbidden: 1, total: 13 }
  }
  const text = keysPage({
    user: { email: 'ada@example.test', csrf: 'x', sections: [] },
    keys: [key('key_failed'), key('key_drawn')],
    recent: { heading: 'Last 7 days', period: 'the last 7 days', ofKey: new Map([['key_failed', null], ['key_drawn', usage]]) },
    error: null,
    now
  })
  t.match(text, /<td class="detail">usage unavailable<\/td>/, 'the failed one: "usage unavailable"')
  t.match(text, /<title id="recent-key_drawn-title">13 requests in the last 7 days, most on 2024-05-10 \(6\)<\/title>/, 'the other: drawn, its busiest day named')
})
