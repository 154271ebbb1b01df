import t from 'tap'
import type { Test } from 'tap'
import { CONTENT_SECURITY_POLICY } from '../../console/security.js'
import { Browser, csrfOf, formTokenOf, startConsole, type PageAnswer } from '../helpers/console.js'
import { startStack, type Stack, type TestGateway } from '../helpers/gateway.js'
import { http } from '../helpers/http.js'

/**
 * The back-office console through the gateway, against a real identity: sign-in,
 * cookies, security headers, cross-site refusals, creating a key whose secret is
 * shown once, refresh on an expired access token, and sign-out revoking the session.
 */

/** A JWT's first characters (`{"` in base64url): no access or refresh token text may appear where this is checked. */
const JWT_START = 'eyJ'

async function setUp (t: Test): Promise<{ s: Stack, gateway: TestGateway, console: Awaited<ReturnType<typeof startConsole>> }> {
  // Identity believes the console's X-Forwarded-For (loopback), so its per-IP login throttle sees the browser.
  const s = await startStack(t, { env: { IDENTITY_TRUST_PROXY: '127.0.0.1' } })
  const console = await startConsole(t, { identityPublicUrl: s.publicUrl, identityAdminUrl: s.adminUrl, now: s.clock.now })
  const gateway = await s.addGateway({ consoleUrl: console.url })
  return { s, gateway, console }
}

function checkHeaders (t: Test, page: PageAnswer, what: string): void {
  t.equal(page.headers.get('content-security-policy'), CONTENT_SECURITY_POLICY, `${what}: the CSP exactly`)
  t.equal(page.headers.get('x-content-type-options'), 'nosniff', `${what}: nosniff`)
  t.equal(page.headers.get('x-frame-options'), 'DENY', `${what}: no framing`)
}

function checkNoToken (t: Test, page: PageAnswer, what: string): void {
  t.notOk(page.text.includes(JWT_START), `${what}: no token in the HTML`)
  t.notOk((page.headers.get('location') ?? '').includes(JWT_START), `${what}: no token in a redirect`)
  for (const line of page.setCookies) t.notOk(line.includes(JWT_START), `${what}: no token text in a cookie`)
}

async function signIn (t: Test, browser: Browser, email: string, password: string): Promise<PageAnswer> {
  const form = await browser.get('/console/sign-in')
  t.equal(form.status, 200, 'the sign-in page')
  return await browser.post('/console/sign-in', { _csrf: csrfOf(form), email, password })
}

t.test('signing in through the gateway, the cookie, the headers', async (t) => {
  const { s, gateway } = await setUp(t)
  const browser = new Browser(gateway.url)

  const entry = await browser.get('/console')
  t.equal(entry.status, 303, 'GET /console redirects')
  t.equal(entry.headers.get('location'), '/console/sign-in', 'to the sign-in page')
  checkHeaders(t, entry, 'the redirect')

  const form = await browser.get('/console/sign-in')
  t.equal(form.status, 200)
  t.match(form.headers.get('content-type'), /^text\/html/, 'HTML, not inflected or refused by the gateway')
  t.equal(form.headers.get('cache-control'), 'no-store')
  checkHeaders(t, form, 'the sign-in page')
  t.match(form.text, /<label for="email">E-mail<\/label>/, 'labelled e-mail field')
  t.match(form.text, /<label for="password">Password<\/label>/, 'labelled password field')
  t.notMatch(form.text, /<script>|<style>|style="|\son[a-z]+="/i, 'no inline script or style')
  t.ok(Buffer.byteLength(form.text) < 150_000, 'the first page is small')
  for (const asset of ['/console/assets/console.css', '/console/assets/console.js']) {
    const answer = await browser.get(asset)
    t.equal(answer.status, 200, `${asset} served by the console through the gateway`)
    checkHeaders(t, answer, asset)
  }

  const wrong = await browser.post('/console/sign-in', { _csrf: csrfOf(form), email: s.user.email, password: 'not the password' })
  t.equal(wrong.status, 401, 'a wrong password is refused')
  t.match(wrong.text, /role="alert"[^>]*>\s*<p>The e-mail or password is wrong\.<\/p>/, 'and said in an alert')
  t.match(wrong.text, /aria-describedby="form-error"/, 'the form points at the error')
  t.notMatch(wrong.text, /not the password/, 'the password is never shown again')

  const signedIn = await browser.post('/console/sign-in', { _csrf: csrfOf(wrong), email: s.user.email, password: s.user.password })
  t.equal(signedIn.status, 303, 'the right password signs in')
  t.equal(signedIn.headers.get('location'), '/console/keys', 'to My keys')
  checkNoToken(t, signedIn, 'the sign-in answer')
  const cookie = signedIn.setCookies.find((line) => line.startsWith('portier-console='))
  t.ok(cookie, 'the session cookie, without __Host- on plain http')
  t.match(cookie, /; HttpOnly/i, 'HttpOnly')
  t.match(cookie, /; SameSite=Strict/i, 'SameSite=Strict')
  t.match(cookie, /; Path=\/(;|$)/i, 'Path=/')
  t.notMatch(cookie, /; Secure/i, 'not Secure on plain http')
  t.notMatch(cookie, /; Domain=/i, 'no Domain')

  const keys = await browser.get('/console/keys')
  t.equal(keys.status, 200, 'My keys')
  checkHeaders(t, keys, 'My keys')
  checkNoToken(t, keys, 'My keys')
  t.match(keys.text, /You have no API keys yet/)
  t.match(keys.text, new RegExp(s.user.email.replace('.', '\\.')), 'who is signed in')
})

t.test('the cookie in secure mode', async (t) => {
  const s = await startStack(t)
  const console = await startConsole(t, { identityPublicUrl: s.publicUrl, identityAdminUrl: s.adminUrl, now: s.clock.now, secureCookie: true })
  const browser = new Browser(console.url)
  const form = await browser.get('/console/sign-in')
  const cookie = form.setCookies.find((line) => line.startsWith('__Host-portier-console='))
  t.ok(cookie, 'the cookie is __Host- prefixed')
  t.match(cookie, /; Secure/i, 'Secure')
  t.match(cookie, /; HttpOnly/i, 'HttpOnly')
  t.match(cookie, /; SameSite=Strict/i, 'SameSite=Strict')
  t.match(cookie, /; Path=\/(;|$)/i, 'Path=/')
  t.notMatch(cookie, /; Domain=/i, 'no Domain')
  t.match(form.headers.get('strict-transport-security'), /max-age=/, 'HSTS in secure mode')
})

t.test('failed sign-ins meet identity\'s throttle', async (t) => {
  const { s, gateway } = await setUp(t)
  const browser = new Browser(gateway.url)
  let page = await browser.get('/console/sign-in')
  for (let i = 0; i < 5; i++) {
    page = await browser.post('/console/sign-in', { _csrf: csrfOf(page), email: s.user.email, password: `wrong ${i}` })
    t.equal(page.status, 401, `failure ${i + 1}`)
  }
  page = await browser.post('/console/sign-in', { _csrf: csrfOf(page), email: s.user.email, password: s.user.password })
  t.equal(page.status, 429, 'throttled, even with the right password')
  t.match(page.text, /role="alert"[^>]*>\s*<p>Too many failed sign-ins\./, 'said in an alert')
  const failures = await s.admin('GET', '/admin/audit?action=login&outcome=failure')
  t.ok(failures.body.records.length >= 5, 'identity recorded the failed logins')
  t.ok(failures.body.records.every((r: { source: { ip: string } }) => r.source.ip === '127.0.0.1'), 'from the browser\'s address as the console passed it')
})

t.test('cross-site and forged requests change nothing', async (t) => {
  const { s, gateway } = await setUp(t)
  const browser = new Browser(gateway.url)
  await signIn(t, browser, s.user.email, s.user.password)
  const form = await browser.get('/console/keys/new')
  const csrf = csrfOf(form)
  const key = { _csrf: csrf, name: 'ci', permissions: 'users:list', expiry: '7' }
  const refusals: Array<[string, Record<string, string>, Record<string, string>]> = [
    ['Sec-Fetch-Site: cross-site', key, { 'sec-fetch-site': 'cross-site' }],
    ['Sec-Fetch-Site: same-site', key, { 'sec-fetch-site': 'same-site' }],
    ['an Origin of another site', key, { origin: 'https://evil.example' }],
    ['no CSRF token', { ...key, _csrf: '' }, {}],
    ['a wrong CSRF token', { ...key, _csrf: `${csrf.slice(0, -2)}xx` }, {}]
  ]
  for (const [what, body, headers] of refusals) {
    const answer = await browser.post('/console/keys', body, headers)
    t.equal(answer.status, 403, `${what}: refused`)
    t.match(answer.text, /Request refused/, `${what}: an HTML refusal`)
    checkHeaders(t, answer, what)
  }
  const signOut = await browser.post('/console/sign-out', { _csrf: 'forged' })
  t.equal(signOut.status, 403, 'a forged sign-out is refused too')
  const tokens = await s.login()
  const own = await http(`${s.publicUrl}/me/keys`, { bearer: tokens.access_token })
  t.same(own.body.api_keys, [], 'no key was made')
  t.equal((await browser.get('/console/keys')).status, 200, 'and the browser is still signed in')
})

t.test('creating a key: the secret once, the key works, forged permissions refused', async (t) => {
  const { s, gateway } = await setUp(t)
  const browser = new Browser(gateway.url)
  await signIn(t, browser, s.user.email, s.user.password)
  const form = await browser.get('/console/keys/new')
  t.equal(form.status, 200)
  t.match(form.text, /value="users:list"/, 'the user\'s own permission is offered')
  t.notMatch(form.text, /admin:/, 'never an operator permission')
  t.match(form.text, /id="expiry-7" name="expiry" value="7" checked/, 'the shortest preset is chosen')

  const created = await browser.post('/console/keys', { _csrf: csrfOf(form), form_token: formTokenOf(form), name: 'reporting', permissions: 'users:list', expiry: '30' })
  t.equal(created.status, 201, 'created')
  t.equal(created.headers.get('cache-control'), 'no-store', 'the secret is never cached')
  checkHeaders(t, created, 'the secret page')
  const secret = /id="secret" class="secret" readonly value="([^"]+)"/.exec(created.text)?.[1]
  t.ok(secret, 'the secret is on the page, without script')
  t.match(created.text, /<dialog id="secret-dialog" open/, 'in a dialog open without script')
  t.match(created.text, /id="copy-status"[^>]*role="status" aria-live="polite"/, 'a live region for "Copied"')
  t.match(created.text, /<button type="button" id="copy-secret" hidden>Copy<\/button>/, 'the Copy button, shown by the script')

  const used = await gateway.call('/users', { headers: { 'x-api-key': secret as string } })
  t.equal(used.status, 200, 'the new key works at the gateway')

  const keys = await browser.get('/console/keys')
  t.equal(keys.status, 200)
  t.match(keys.text, /<th scope="row"><a href="\/console\/keys\/[^"]+">reporting<\/a><\/th>/, 'the key is listed, its name a link to its page')
  t.notOk(keys.text.includes(secret as string), 'and its secret is never shown again')
  t.ok(keys.text.includes(`<td><code>${(secret as string).slice(0, 16)}…${(secret as string).slice(-4)}</code></td>`), 'but its prefix and last 4 characters are, to tell it by')
  t.match(keys.text, /status-active/, 'active')

  const another = await browser.get('/console/keys/new')
  const forged = await browser.post('/console/keys', { _csrf: csrfOf(another), form_token: formTokenOf(another), name: 'too-much', permissions: ['users:list', 'users:delete'], expiry: '7' })
  t.equal(forged.status, 403, 'a permission the user lacks is refused by identity')
  t.match(forged.text, /role="alert"[^>]*>\s*<p>[^<]*users:delete/, 'and the refusal is shown, naming it')
  const audit = await s.admin('GET', '/admin/audit?action=key.create&outcome=failure')
  t.equal(audit.body.records[0]?.error_code, 'permission_not_held', 'identity\'s audit trail has the refusal')
  t.equal(audit.body.records[0]?.actor?.id, s.userId, 'naming the user')
})

t.test('an expired access token is refreshed; signing out revokes the session', async (t) => {
  const { s, gateway, console } = await setUp(t)
  const browser = new Browser(gateway.url)
  await signIn(t, browser, s.user.email, s.user.password)
  const cookieName = 'portier-console'
  const tokensIn = (): { access: string, refresh: string } => {
    const session = console.app.decodeSecureSession(decodeURIComponent(browser.cookies.get(cookieName) as string))
    return session?.get('tokens') as { access: string, refresh: string }
  }
  const first = tokensIn()
  s.clock.advance(11 * 60_000)
  const expired = await http(`${s.publicUrl}/me`, { bearer: first.access })
  t.equal(expired.status, 401, 'the first access token has expired')
  const keys = await browser.get('/console/keys')
  t.equal(keys.status, 200, 'the page still opens: the console refreshed the tokens')
  const second = tokensIn()
  t.not(second.access, first.access, 'a new access token')
  t.equal((await http(`${s.publicUrl}/me`, { bearer: second.access })).status, 200, 'which works')

  const out = await browser.post('/console/sign-out', { _csrf: csrfOf(keys) })
  t.equal(out.status, 303, 'signed out')
  t.equal(out.headers.get('location'), '/console/sign-in')
  t.equal((await http(`${s.publicUrl}/me`, { bearer: second.access })).status, 401, 'the session is revoked at identity')
  t.notOk(browser.cookies.has(cookieName), 'the cookie is cleared')
  const after = await browser.get('/console/keys')
  t.equal(after.status, 303, 'My keys asks for signing in again')
})

t.test('the gateway forwards the console as a browser asks for it, and only when told where it is', async (t) => {
  const { s, gateway } = await setUp(t)
  const html = await http(`${gateway.url}/console/sign-in`, { headers: { accept: 'text/html' } })
  t.equal(html.status, 200, 'an Accept of text/html only is served on the console\'s routes')
  const api = await http(`${gateway.url}/users`, { headers: { accept: 'text/html' } })
  t.equal(api.status, 406, 'and still refused elsewhere')
  const form = await http(`${gateway.url}/console/sign-in`, { method: 'POST', body: 'email=a', headers: { 'content-type': 'text/plain' } })
  t.equal(form.status, 415, 'the console\'s routes take forms, not any body')
  const document = await http(`${gateway.url}/openapi.json`)
  t.equal(document.status, 200, 'the gateway\'s API document')
  t.notOk(Object.keys(document.body.paths ?? {}).some((path) => path.startsWith('/console')), 'the console\'s pages are not in the API document')
  const without = await s.addGateway()
  t.equal((await http(`${without.url}/console/sign-in`)).status, 404, 'a gateway without consoleUrl serves no console')
})
