import t from 'tap'
import type { Test } from 'tap'
import { CONTENT_SECURITY_POLICY } from '../../console/security.js'
import { Browser, csrfOf, formTokenOf, startConsole, type PageAnswer } from '../helpers/console.js'
import { pollUntil } from '../helpers/gateway-auth.js'
import { startStack, type Stack, type TestGateway } from '../helpers/gateway.js'

/**
 * A key's detail page in the console, through the gateway against a real identity:
 * its facts, its usage counted from real calls at the gateway, rotating it (the old
 * secret refused at once or kept for the grace chosen), revoking it only when its name
 * is typed, another user's key unseen, and both forms refused from another site.
 */

interface Setup { s: Stack, gateway: TestGateway, browser: Browser }

async function setUp (t: Test): Promise<Setup> {
  const s = await startStack(t, { env: { IDENTITY_TRUST_PROXY: '127.0.0.1' } })
  const console = await startConsole(t, { identityPublicUrl: s.publicUrl, identityAdminUrl: s.adminUrl, now: s.clock.now })
  // Usage reaches identity when the gateway flushes its counts: every 0.2 s here, not every 5 s.
  const gateway = await s.addGateway({ consoleUrl: console.url, keyUsageFlushSeconds: 0.2 })
  const browser = new Browser(gateway.url)
  const form = await browser.get('/console/sign-in')
  const signedIn = await browser.post('/console/sign-in', { _csrf: csrfOf(form), email: s.user.email, password: s.user.password })
  t.equal(signedIn.status, 303, 'signed in')
  return { s, gateway, browser }
}

/** A key made through the console's own form; its id is read from My keys' link. */
async function makeKey (t: Test, browser: Browser, name: string): Promise<{ id: string, secret: string }> {
  const form = await browser.get('/console/keys/new')
  const created = await browser.post('/console/keys', { _csrf: csrfOf(form), form_token: formTokenOf(form), name, permissions: 'users:list', expiry: '30' })
  t.equal(created.status, 201, `key ${name} created`)
  const secret = /id="secret" class="secret" readonly value="([^"]+)"/.exec(created.text)?.[1] ?? ''
  const keys = await browser.get('/console/keys')
  const id = new RegExp(`<a href="/console/keys/([^"]+)">${name}</a>`).exec(keys.text)?.[1] ?? ''
  t.ok(id !== '' && secret !== '', 'My keys links the key\'s name to its page')
  return { id, secret }
}

const status = async (gateway: TestGateway, secret: string): Promise<number> => (await gateway.call('/users?per_page=1', { headers: { 'x-api-key': secret } })).status

function checkPage (t: Test, page: PageAnswer, what: string): void {
  t.equal(page.headers.get('content-security-policy'), CONTENT_SECURITY_POLICY, `${what}: the CSP`)
  t.equal(page.headers.get('cache-control'), 'no-store', `${what}: never cached`)
  t.notMatch(page.text, /<script>|<style>|style="|\son[a-z]+="/i, `${what}: no inline script or style`)
}

/** The usage table's row of totals: allowed, forbidden, rate limited, quota exhausted, upstream errors, total. */
function totalsOf (page: PageAnswer): number[] {
  const row = /<tfoot><tr><th scope="row">All<\/th>((?:<td>\d+<\/td>){6})<\/tr><\/tfoot>/.exec(page.text)?.[1] ?? ''
  return [...row.matchAll(/<td>(\d+)<\/td>/g)].map((m) => Number(m[1]))
}

t.test('the detail page: facts, usage counted at the gateway, the period switcher', async (t) => {
  const { s, gateway, browser } = await setUp(t)
  const key = await makeKey(t, browser, 'reporting')
  for (let i = 0; i < 3; i++) t.equal(await status(gateway, key.secret), 200, 'an allowed call')
  t.equal((await gateway.call('/tasks', { headers: { 'x-api-key': key.secret } })).status, 403, 'a forbidden call')

  let page = await browser.get(`/console/keys/${key.id}`)
  const counted = await pollUntil(async () => {
    page = await browser.get(`/console/keys/${key.id}`)
    return totalsOf(page)[5] === 4
  }, { timeoutMs: 10_000, intervalMs: 200 })
  t.ok(counted !== null, 'the four calls reach the page')
  t.equal(page.status, 200)
  checkPage(t, page, 'the detail page')
  t.same(totalsOf(page), [3, 1, 0, 0, 0, 4], 'the usage table: 3 allowed, 1 forbidden, 4 in all')
  t.match(page.text, /<h1>Key “reporting”<\/h1>/, 'the key\'s name')
  t.ok(page.text.includes(`<dt>Prefix</dt><dd><code>${key.secret.slice(0, 16)}…${key.secret.slice(-4)}</code></dd>`), 'its prefix and last 4 characters')
  t.match(page.text, /<dt>Permissions<\/dt><dd><code>users:list<\/code><\/dd>/, 'its permissions')
  t.match(page.text, /<dt>Expires<\/dt><dd><time datetime="[^"]+" title="[^"]+">in 30 days<\/time><span class="exact">/, 'expiry relative and exact')
  t.match(page.text, /<dt>Last used<\/dt><dd><time[^>]*>[^<]+<\/time><span class="exact">[^<]+<\/span><span class="detail">[^<]*\/users[^<]*<\/span><span class="detail">from 127\.0\.0\.1<\/span>/, 'last use: time, route, address')
  t.match(page.text, /id="key-status">Active</, 'active')
  t.notOk(page.text.includes(key.secret), 'never the secret')
  t.match(page.text, /<svg class="usage-chart"[^>]* role="img" aria-label="Requests with this key, the last 24 hours, per hour: 4 requests: 3 allowed/, 'the chart, named with its totals')
  t.match(page.text, /<rect [^>]*fill="#1e6b34"\/>/, 'an allowed bar')
  t.match(page.text, /<rect [^>]*fill="#a4161a"\/>/, 'a forbidden bar')
  t.match(page.text, /<title>[^<]+ UTC: 4 requests: 3 allowed \(0 upstream errors\), 1 forbidden/, 'the hour\'s bar says its numbers')
  t.match(page.text, /<caption>Requests with this key, the last 24 hours, per hour/, 'the table has a caption')
  t.match(page.text, /<a href="\/console\/keys\/[^"]+\?range=24h" aria-current="page">/, 'the period shown is marked')

  for (const [range, buckets] of [['7d', [7, 8]], ['30d', [30, 31]]] as const) {
    const other = await browser.get(`/console/keys/${key.id}?range=${range}`)
    t.equal(other.status, 200, `range ${range}`)
    t.match(other.text, new RegExp(`\\?range=${range}" aria-current="page"`), `${range} is marked`)
    t.match(other.text, /per day/, 'per day')
    const rows = [...other.text.matchAll(/<tr><th scope="row">\d{4}-\d{2}-\d{2}<\/th>/g)].length
    t.ok((buckets as readonly number[]).includes(rows), `${range}: ${rows} days`)
    t.same(totalsOf(other), [3, 1, 0, 0, 0, 4], `${range}: the same totals`)
  }

  const unknown = await browser.get('/console/keys/key_00000000000000000000000000')
  t.equal(unknown.status, 404, 'an unknown key is not found')
  t.match(unknown.text, /Page not found/)
  const foreign = await s.createKey(['users:list'])
  const notMine = await browser.get(`/console/keys/${foreign.id}`)
  t.equal(notMine.status, 404, 'a key that is not the user\'s is not found either')
  t.notMatch(notMine.text, /key-\d+/, 'and nothing of it is shown')
  const forged = await browser.post(`/console/keys/${foreign.id}/revoke`, { _csrf: csrfOf(page), confirm_name: 'x' })
  t.equal(forged.status, 404, 'nor can it be revoked')
  t.equal(await status(gateway, foreign.key), 200, 'it still works')
})

t.test('rotating: grace 0 refuses the old secret at once, 1 hour keeps both', async (t) => {
  const { gateway, browser } = await setUp(t)
  const key = await makeKey(t, browser, 'rotated')
  const page = await browser.get(`/console/keys/${key.id}`)
  t.match(page.text, /<input type="radio" id="grace-3600" name="grace_seconds" value="3600" checked>/, '1 hour is chosen')
  for (const seconds of [0, 86400, 604800]) t.match(page.text, new RegExp(`id="grace-${seconds}"`), `grace ${seconds} offered`)

  const odd = await browser.post(`/console/keys/${key.id}/rotate`, { _csrf: csrfOf(page), form_token: formTokenOf(page), grace_seconds: '5' })
  t.equal(odd.status, 400, 'a grace not offered is refused')
  t.match(odd.text, /role="alert"/, 'in an alert')
  t.equal(await status(gateway, key.secret), 200, 'and the key is as it was')

  const nowForm = { _csrf: csrfOf(odd), form_token: formTokenOf(odd), grace_seconds: '0' }
  const now = await browser.post(`/console/keys/${key.id}/rotate`, nowForm)
  t.equal(now.status, 200, 'rotated')
  checkPage(t, now, 'the new secret')
  t.match(now.text, /<dialog id="secret-dialog" open/, 'in the create flow\'s dialog')
  t.match(now.text, /<a class="button" id="secret-done" href="\/console\/keys\/[^"]+">/, 'whose Done goes back to the key')
  const second = /id="secret" class="secret" readonly value="([^"]+)"/.exec(now.text)?.[1] ?? ''
  t.not(second, key.secret, 'a new secret')
  const refused = await pollUntil(async () => await status(gateway, key.secret) === 401, { timeoutMs: 2_000, intervalMs: 50 })
  t.ok(refused !== null, 'grace 0: the old secret is refused at the gateway')
  t.equal(await status(gateway, second), 200, 'the new one works')

  const resent = await browser.post(`/console/keys/${key.id}/rotate`, nowForm)
  t.equal(resent.status, 409, 'the same rotate form sent again is refused')
  t.match(resent.text, /This form was already sent: the key was rotated once/, 'said in words')
  t.notMatch(resent.text, /id="secret"/, 'with no new secret')
  t.equal(await status(gateway, second), 200, 'the secret shown first still works: the key was rotated once')

  const again = await browser.get(`/console/keys/${key.id}`)
  const graced = await browser.post(`/console/keys/${key.id}/rotate`, { _csrf: csrfOf(again), form_token: formTokenOf(again), grace_seconds: '3600' })
  t.equal(graced.status, 200, 'rotated with an hour of grace')
  const third = /id="secret" class="secret" readonly value="([^"]+)"/.exec(graced.text)?.[1] ?? ''
  t.equal(await status(gateway, second), 200, 'grace 1 hour: the old secret still works')
  t.equal(await status(gateway, third), 200, 'and so does the new one')
  const rotating = await browser.get(`/console/keys/${key.id}`)
  t.match(rotating.text, /id="key-status">Rotating</, 'the page says the key is rotating')
})

t.test('revoking: only with the key\'s name typed; the gateway refuses the key within 1 s', async (t) => {
  const { gateway, browser } = await setUp(t)
  const key = await makeKey(t, browser, 'doomed')
  const page = await browser.get(`/console/keys/${key.id}`)
  t.match(page.text, /<label for="confirm-name">/, 'a labelled confirmation field')

  const wrong = await browser.post(`/console/keys/${key.id}/revoke`, { _csrf: csrfOf(page), confirm_name: 'Doomed' })
  t.equal(wrong.status, 400, 'a name that differs is refused')
  t.match(wrong.text, /role="alert"[^>]*>\s*<p>Type the key&#39;s name, doomed, exactly to revoke it\. Nothing was revoked\.<\/p>/, 'said in an alert')
  t.match(wrong.text, /id="confirm-name"[^>]* aria-describedby="form-error" aria-invalid="true"/, 'the field points at it')
  t.equal(await status(gateway, key.secret), 200, 'the key still works')

  const right = await browser.post(`/console/keys/${key.id}/revoke`, { _csrf: csrfOf(wrong), confirm_name: 'doomed' })
  t.equal(right.status, 303, 'revoked')
  t.equal(right.headers.get('location'), `/console/keys/${key.id}`, 'back to the key\'s page')
  const since = performance.now()
  const refused = await pollUntil(async () => await status(gateway, key.secret) === 401, { since, timeoutMs: 1_000, intervalMs: 20 })
  t.ok(refused !== null, `the gateway refuses the key within 1 s (${refused ?? 'not'} ms)`)
  const after = await browser.get(`/console/keys/${key.id}`)
  t.match(after.text, /id="key-status">Revoked</, 'the page shows it revoked')
  t.notMatch(after.text, /id="rotate-key"|id="revoke-key"/, 'with no rotate or revoke left')
})

t.test('both forms refuse another site, another origin and a missing or wrong CSRF token', async (t) => {
  const { gateway, browser } = await setUp(t)
  const key = await makeKey(t, browser, 'guarded')
  const page = await browser.get(`/console/keys/${key.id}`)
  const csrf = csrfOf(page)
  for (const [action, form] of [['rotate', { grace_seconds: '0', form_token: formTokenOf(page) }], ['revoke', { confirm_name: 'guarded' }]] as const) {
    const refusals: Array<[string, Record<string, string>, Record<string, string>]> = [
      ['Sec-Fetch-Site: cross-site', { ...form, _csrf: csrf }, { 'sec-fetch-site': 'cross-site' }],
      ['an Origin of another site', { ...form, _csrf: csrf }, { origin: 'https://evil.example' }],
      ['no CSRF token', { ...form }, {}],
      ['a wrong CSRF token', { ...form, _csrf: `${csrf.slice(0, -2)}xx` }, {}]
    ]
    for (const [what, body, headers] of refusals) {
      const answer = await browser.post(`/console/keys/${key.id}/${action}`, body, headers)
      t.equal(answer.status, 403, `${action}, ${what}: refused`)
      t.match(answer.text, /Request refused/, `${action}, ${what}: an HTML refusal`)
    }
  }
  t.equal(await status(gateway, key.secret), 200, 'the key neither rotated nor revoked')
  t.match((await browser.get(`/console/keys/${key.id}`)).text, /id="key-status">Active</, 'still active')
})
