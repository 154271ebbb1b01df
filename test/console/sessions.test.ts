import t from 'tap'
import type { Test } from 'tap'
import { Browser, csrfOf, startConsoleStack, tokensOf, type PageAnswer } from '../helpers/console.js'
import { http } from '../helpers/http.js'
import { browserSummary } from '../../console/user-agent.js'

/**
 * My sessions through the gateway, against a real identity: the user's sessions listed
 * with the current one marked, ending another one (its token then refused by
 * identity), ending all the others, forged or cross-site forms refused, and another
 * user's session out of reach.
 */

const CHROME_LINUX = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36'
const FIREFOX_WINDOWS = 'Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:133.0) Gecko/20100101 Firefox/133.0'

interface OwnSession { id: string, current: boolean, user_agent: string }

async function sessionsAt (publicUrl: string, access: string): Promise<{ status: number, sessions: OwnSession[] }> {
  const answer = await http(`${publicUrl}/me/sessions`, { bearer: access })
  return { status: answer.status, sessions: answer.body?.sessions ?? [] }
}

function currentId (sessions: OwnSession[]): string {
  const id = sessions.find((s) => s.current)?.id
  if (id === undefined) throw new Error('no current session')
  return id
}

/** The message a sessions form came back with: its role and text. */
function noticeOf (page: PageAnswer): { role: string, text: string } | null {
  const match = /<div class="(?:notice|alert)" role="(status|alert)"[^>]*>\s*<p>([^<]*)<\/p>/.exec(page.text)
  return match === null ? null : { role: match[1] as string, text: match[2] as string }
}

async function signedInBrowser (t: Test, url: string, email: string, password: string, userAgent: string): Promise<Browser> {
  const browser = new Browser(url)
  const form = await browser.get('/console/sign-in', { 'user-agent': userAgent })
  const answer = await browser.post('/console/sign-in', { _csrf: csrfOf(form), email, password }, { 'user-agent': userAgent })
  t.equal(answer.status, 303, `signed in as ${email} with ${browserSummary(userAgent)}`)
  return browser
}

t.test('the list, the current session marked, ending another one', async (t) => {
  const { s, gateway, console } = await startConsoleStack(t)
  const first = await signedInBrowser(t, gateway.url, s.user.email, s.user.password, CHROME_LINUX)
  const second = await signedInBrowser(t, gateway.url, s.user.email, s.user.password, FIREFOX_WINDOWS)
  const firstTokens = tokensOf(console, first)
  const secondTokens = tokensOf(console, second)
  const secondId = currentId((await sessionsAt(s.publicUrl, secondTokens.access)).sessions)
  const firstId = currentId((await sessionsAt(s.publicUrl, firstTokens.access)).sessions)

  const page = await first.get('/console/sessions')
  t.equal(page.status, 200, 'My sessions')
  t.equal(page.headers.get('cache-control'), 'no-store')
  t.match(page.text, /<a href="\/console\/sessions">My sessions<\/a>/, 'in the navigation')
  t.match(page.text, /<abbr title="Mozilla\/5\.0 \(X11; Linux x86_64\)[^"]*">Chrome on Linux<\/abbr>/, 'the first browser, summarised, the full user agent beside it')
  t.match(page.text, /<abbr title="[^"]*Firefox\/133\.0">Firefox on Windows<\/abbr>/, 'the second browser')
  t.match(page.text, /<time datetime="[^"]+" title="[^"]+ UTC">/, 'times relative and exact')
  t.match(page.text, /<td>127\.0\.0\.1<\/td>/, 'the address identity saw: the browser\'s, as the console passed it')
  t.equal(page.text.match(/<strong>This session<\/strong>/g)?.length, 1, 'one session is marked as this one, in words')
  t.notOk(page.text.includes(`/console/sessions/${firstId}/end`), 'and has no End form (signing out ends it)')
  t.ok(page.text.includes(`action="/console/sessions/${secondId}/end"`), 'the other session has its End form')
  t.match(page.text, /id="end-others">End all other sessions \(1\)</, 'and Ending all the others says how many')

  const ended = await first.post(`/console/sessions/${secondId}/end`, { _csrf: csrfOf(page) })
  t.equal(ended.status, 303, 'ending the other session')
  t.equal(ended.headers.get('location'), '/console/sessions', 'back to My sessions')
  const after = await first.get('/console/sessions')
  t.same(noticeOf(after), { role: 'status', text: 'The session was ended: it is signed out.' }, 'which says so in a status message')
  t.notOk(after.text.includes(secondId), 'the ended session is gone from the list')
  t.same(noticeOf(await first.get('/console/sessions')), null, 'the message is shown once')
  t.equal((await http(`${s.publicUrl}/me`, { bearer: secondTokens.access })).status, 401, 'the ended session\'s access token is refused by identity')
  t.equal((await second.get('/console/sessions')).status, 303, 'and its browser is asked to sign in again once its token is due')
  t.equal((await http(`${s.publicUrl}/me`, { bearer: firstTokens.access })).status, 200, 'this session goes on')

  const own = await first.post(`/console/sessions/${firstId}/end`, { _csrf: csrfOf(after) })
  t.equal(own.status, 303)
  t.same(noticeOf(await first.get('/console/sessions')), { role: 'alert', text: 'This is the session of the presented token; log out to end it.' }, 'a forged form for this session is identity\'s refusal, shown')
  t.equal((await http(`${s.publicUrl}/me`, { bearer: firstTokens.access })).status, 200, 'and this session is not ended')
})

t.test('ending all the other sessions says how many', async (t) => {
  const { s, gateway, console } = await startConsoleStack(t)
  const browser = await signedInBrowser(t, gateway.url, s.user.email, s.user.password, CHROME_LINUX)
  const others = [await s.login(), await s.login()]
  const page = await browser.get('/console/sessions')
  t.match(page.text, /End all other sessions \(2\)/)
  const ended = await browser.post('/console/sessions/end-others', { _csrf: csrfOf(page) })
  t.equal(ended.status, 303)
  const after = await browser.get('/console/sessions')
  t.same(noticeOf(after), { role: 'status', text: 'Ended 2 other sessions: they are signed out.' }, 'a status message with the count')
  for (const tokens of others) t.equal((await http(`${s.publicUrl}/me`, { bearer: tokens.access_token })).status, 401, 'each other session is ended at identity')
  const left = await sessionsAt(s.publicUrl, tokensOf(console, browser).access)
  t.equal(left.sessions.length, 1, 'only this session is left')
  t.match(after.text, /You are signed in nowhere else\./, 'and the page says so, without the form')

  const again = await browser.post('/console/sessions/end-others', { _csrf: csrfOf(after) })
  t.equal(again.status, 303)
  t.same(noticeOf(await browser.get('/console/sessions')), { role: 'status', text: 'There was no other session to end.' })
})

t.test('forged and cross-site forms change nothing', async (t) => {
  const { s, gateway, console } = await startConsoleStack(t)
  const browser = await signedInBrowser(t, gateway.url, s.user.email, s.user.password, CHROME_LINUX)
  const other = await s.login()
  const otherId = currentId((await sessionsAt(s.publicUrl, other.access_token)).sessions)
  const page = await browser.get('/console/sessions')
  const csrf = csrfOf(page)
  const refusals: Array<[string, Record<string, string>, Record<string, string>]> = [
    ['Sec-Fetch-Site: cross-site', { _csrf: csrf }, { 'sec-fetch-site': 'cross-site' }],
    ['Sec-Fetch-Site: same-site', { _csrf: csrf }, { 'sec-fetch-site': 'same-site' }],
    ['an Origin of another site', { _csrf: csrf }, { origin: 'https://evil.example' }],
    ['no CSRF token', { _csrf: '' }, {}],
    ['a wrong CSRF token', { _csrf: `${csrf.slice(0, -2)}xx` }, {}]
  ]
  for (const path of [`/console/sessions/${otherId}/end`, '/console/sessions/end-others']) {
    for (const [what, body, headers] of refusals) {
      const answer = await browser.post(path, body, headers)
      t.equal(answer.status, 403, `${path}, ${what}: refused`)
      t.match(answer.text, /Request refused/, `${path}, ${what}: an HTML refusal`)
    }
  }
  t.equal((await http(`${s.publicUrl}/me`, { bearer: other.access_token })).status, 200, 'the other session is not ended')
  t.equal((await sessionsAt(s.publicUrl, tokensOf(console, browser).access)).sessions.length, 2, 'both sessions are still there')
})

t.test('another user\'s session is not found and not ended', async (t) => {
  const { s, gateway } = await startConsoleStack(t)
  const mallory = { email: 'mallory@example.com', password: 'mallory password 1' }
  t.equal((await s.admin('POST', '/admin/users', { ...mallory, roles: ['reader'] })).status, 201, 'a second user')
  const victim = await s.login()
  const victimId = currentId((await sessionsAt(s.publicUrl, victim.access_token)).sessions)
  const browser = await signedInBrowser(t, gateway.url, mallory.email, mallory.password, FIREFOX_WINDOWS)
  const page = await browser.get('/console/sessions')
  t.notOk(page.text.includes(victimId), 'another user\'s session is not listed')
  const ended = await browser.post(`/console/sessions/${victimId}/end`, { _csrf: csrfOf(page) })
  t.equal(ended.status, 303)
  t.same(noticeOf(await browser.get('/console/sessions')), { role: 'alert', text: 'That session was not found among yours. Nothing was changed.' }, 'the page says it was not found')
  t.equal((await http(`${s.publicUrl}/me`, { bearer: victim.access_token })).status, 200, 'and the other user\'s session goes on')
})

t.test('signed out, My sessions asks for signing in', async (t) => {
  const { gateway } = await startConsoleStack(t)
  const browser = new Browser(gateway.url)
  const page = await browser.get('/console/sessions')
  t.equal(page.status, 303)
  t.equal(page.headers.get('location'), '/console/sign-in')
})

t.test('a browser as people know it', async (t) => {
  const cases: Array<[string, string]> = [
    [CHROME_LINUX, 'Chrome on Linux'],
    [FIREFOX_WINDOWS, 'Firefox on Windows'],
    ['Mozilla/5.0 (Macintosh; Intel Mac OS X 14_5) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Safari/605.1.15', 'Safari on macOS'],
    ['Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 Edg/131.0.0.0', 'Edge on Windows'],
    ['Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36', 'Chrome on Android'],
    ['Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1', 'Safari on iOS'],
    ['Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/131.0.0.0 Safari/537.36', 'Chrome on Linux'],
    ['curl/8.5.0', 'curl'],
    ['', 'Unknown']
  ]
  for (const [agent, summary] of cases) t.equal(browserSummary(agent), summary, summary)
})
