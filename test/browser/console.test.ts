import t, { type Test } from 'tap'
import type { Page } from 'playwright-core'
import { DEMO_STARTED, demoEnvironment } from '../helpers/demo.js'
import { http } from '../helpers/http.js'
import { pollUntil } from '../helpers/gateway-auth.js'
import { startProcess } from '../helpers/process.js'
import { focusedElement, launchBrowser, newContext, openPage, readClipboard, runAxe, saveScreenshot, tabTo, type CspWatch, type FocusedElement } from '../helpers/browser.js'
import { servePages } from '../helpers/page-server.js'

// The console as a person uses it, in a real browser, against the system `npm start`
// starts: every page it shows breaks no Content-Security-Policy and no WCAG 2.1 A/AA
// rule, a new key's secret is copied once and works at the gateway, the keyboard alone
// is enough, and another site cannot make a key with the user's session.

interface Account { email: string, password: string }
interface System { gateway: string, console: string, identityAdmin: string, user: Account, admin: Account }

/** `npm start`, as a person runs it: the console at the gateway's /console, the demo accounts on its banner. */
async function startSystem (t: Test): Promise<System> {
  const setup = await demoEnvironment(t)
  const demo = startProcess(t, 'dist/demo/start.js', setup.env, DEMO_STARTED)
  if (!await demo.ready) throw new Error(`npm start did not start: ${demo.stderr().slice(-2000)}`)
  const banner = demo.stdout()
  const consoleUrl = /console, in a browser +(\S+)/.exec(banner)?.[1]
  const user = /(user@example\.com) {3}password (\S+)/.exec(banner)
  const admin = /(admin@example\.com) {3}password (\S+)/.exec(banner)
  if (consoleUrl === undefined || user === null || admin === null) throw new Error(`the banner names no console or no demo accounts:\n${banner}`)
  return {
    gateway: setup.gateway,
    console: consoleUrl.replace(/\/$/, ''),
    identityAdmin: setup.identityAdmin,
    user: { email: user[1] as string, password: user[2] as string },
    admin: { email: admin[1] as string, password: admin[2] as string }
  }
}

const system = await startSystem(t)
const browser = await launchBrowser(t)
const consoleOrigin = new URL(system.console).origin

/** The pages docs/console.md shows, one picture each (PORTIER_SCREENSHOTS=1 draws them again). */
const DOCUMENTED = new Set(['sign-in', 'my-keys', 'create-key', 'key-created', 'key-detail', 'my-sessions',
  'operator-overview', 'operator-users', 'operator-user', 'operator-roles', 'operator-role', 'operator-all-keys', 'operator-audit'])

/** A page as the test sees it: no CSP violation or console error so far, no axe violation now. */
async function checkPage (t: Test, page: Page, csp: CspWatch, name: string): Promise<void> {
  await csp.settled()
  t.same(csp.violations, [], `${name}: no CSP violation`)
  t.same(csp.consoleErrors, [], `${name}: no console error`)
  t.same(await runAxe(page), [], `${name}: no WCAG 2.1 A/AA violation`)
  if (DOCUMENTED.has(name)) await saveScreenshot(page, name)
}

async function signIn (page: Page, account: Account = system.user): Promise<void> {
  await page.fill('#email', account.email)
  await page.fill('#password', account.password)
  const answer = page.waitForResponse((response) => response.request().method() === 'POST' && response.url() === `${system.console}/sign-in`)
  await page.click('#sign-in')
  if ((await answer).status() !== 303) {
    // What the page says when sign-in is refused is worth more than a timeout.
    throw new Error(`signing in did not reach My keys: ${await page.locator('[role="alert"]').first().innerText()}`)
  }
  await page.waitForURL(`${system.console}/keys`)
}

async function ownKeyNames (page: Page): Promise<string[]> {
  await page.goto(`${system.console}/keys`)
  return await page.locator('#keys tbody th[scope="row"]').allTextContents()
}

t.test('sign in, My keys, create a key with part of the user\'s permissions, copy it, use it at the gateway', async (t) => {
  const context = await newContext(t, browser, consoleOrigin)
  const { page, csp } = await openPage(context, `${system.console}/sign-in`)
  await checkPage(t, page, csp, 'sign-in')
  // Everything the first page made the browser fetch (a fresh context: nothing cached), headers included.
  const transferred = await page.evaluate<number>(`[...performance.getEntriesByType('navigation'), ...performance.getEntriesByType('resource')]
    .reduce((sum, entry) => sum + entry.transferSize, 0)`)
  t.ok(transferred > 0 && transferred <= 150 * 1024, `the first page transfers at most 150 KB (${transferred} bytes)`)

  await signIn(page)
  await checkPage(t, page, csp, 'my-keys-empty')

  await page.getByRole('link', { name: 'Create a key' }).first().click()
  await page.waitForURL(`${system.console}/keys/new`)
  t.same((await page.evaluate<string[]>('[...document.querySelectorAll(\'input[name="permissions"]\')].map((box) => box.value)')).sort(), ['meetings:*', 'tasks:*'],
    'the form offers the user\'s own permissions')
  await checkPage(t, page, csp, 'create-key')

  await page.fill('#name', 'tasks-only')
  await page.check('input[name="permissions"][value="tasks:*"]')
  await page.check('#expiry-30')
  await page.click('#create-key')
  await page.locator('#secret-dialog[open]').waitFor()
  const secret = await page.inputValue('#secret')
  t.match(secret, /^ptk_/, 'the secret is shown')
  await checkPage(t, page, csp, 'key-created')

  await page.click('#copy-secret')
  await page.locator('#copy-status', { hasText: 'Copied' }).waitFor()
  t.equal(await readClipboard(page), secret, 'Copy puts the secret on the clipboard')
  t.equal((await http(`${system.gateway}/tasks`, { headers: { 'x-api-key': secret } })).status, 200, 'the copied key calls the gateway within its permissions')
  t.equal((await http(`${system.gateway}/meetings`, { headers: { 'x-api-key': secret } })).status, 403, 'and only within them: the user\'s other permission is not on it')

  await page.keyboard.press('Escape')
  await page.locator('#secret-dialog').waitFor({ state: 'hidden' })
  t.notOk((await page.content()).includes(secret), 'closed, the dialog leaves the secret nowhere in the page')

  t.same(await ownKeyNames(page), ['tasks-only'], 'My keys lists the new key')
  t.notOk((await page.content()).includes(secret), 'without its secret')
  await checkPage(t, page, csp, 'my-keys')

  // The gateway reports usage in batches: the page shows the call once identity has it.
  await page.getByRole('link', { name: 'tasks-only' }).click()
  await page.waitForURL(/\/console\/keys\/[^/?]+$/)
  const counted = await pollUntil(async () => {
    await page.reload()
    return await page.locator('#usage tfoot td').last().innerText() === '2'
  }, { timeoutMs: 15_000, intervalMs: 500 })
  t.ok(counted !== null, 'the two calls reach the key\'s usage table')
  t.equal(await page.locator('#usage tfoot td').first().innerText(), '1', 'one of them allowed')
  t.match(await page.locator('svg.usage-chart').getAttribute('aria-label') ?? '', /: 2 requests: 1 allowed\b.*\b1 forbidden/, 'and the chart says so, the forbidden call beside it')
})

/** The identity admin API, as the demo admin (an operator): what the audit trail says. */
async function auditRecords (query: string): Promise<Array<Record<string, any>>> {
  const session = await http(`${system.gateway}/sessions`, { method: 'POST', body: { session: system.admin } })
  const answer = await http(`${system.identityAdmin}/admin/audit?${query}`, { bearer: session.body.access_token })
  if (answer.status !== 200) throw new Error(`the audit trail answered ${answer.status}`)
  return answer.body.records
}

t.test('a permission the user does not hold, forged into the form, is refused and recorded', async (t) => {
  const context = await newContext(t, browser, consoleOrigin)
  const { page, csp } = await openPage(context, `${system.console}/sign-in`)
  await signIn(page)
  const before = await ownKeyNames(page)
  await page.goto(`${system.console}/keys/new`)
  await page.fill('#name', 'forged')
  // What a user editing the page in their browser's tools would send: users:* is not theirs.
  await page.evaluate('document.querySelector(\'input[name="permissions"]\').value = "users:*"')
  await page.check('input[name="permissions"][value="users:*"]')
  const answer = page.waitForResponse((response) => response.url() === `${system.console}/keys` && response.request().method() === 'POST')
  await page.click('#create-key')
  t.equal((await answer).status(), 403, 'the console passes on identity\'s refusal')
  await page.locator('#form-error').waitFor()
  t.match(await page.locator('#form-error').innerText(), /users:\*/, 'the alert names the permission')
  csp.consoleErrors.splice(0, csp.consoleErrors.length, ...csp.consoleErrors.filter((error) => !/status of 403/.test(error)))
  await checkPage(t, page, csp, 'create-key-refused')
  t.same(await ownKeyNames(page), before, 'no key was made')
  const [record] = await auditRecords('action=key.create&outcome=failure&limit=1')
  t.equal(record?.error_code, 'permission_not_held', 'the audit trail has the refusal')
  t.match(JSON.stringify(record), /users:\*/, 'naming the permission asked for')
})

t.test('rotation with an hour of grace: both secrets work until the grace ends', async (t) => {
  const context = await newContext(t, browser, consoleOrigin)
  const { page } = await openPage(context, `${system.console}/sign-in`)
  await signIn(page)
  await page.goto(`${system.console}/keys/new`)
  await page.fill('#name', 'graceful')
  await page.check('input[name="permissions"][value="tasks:*"]')
  await page.click('#create-key')
  await page.locator('#secret-dialog[open]').waitFor()
  const old = await page.inputValue('#secret')
  await page.click('#secret-done')
  await page.goto(`${system.console}/keys`)
  await page.getByRole('link', { name: 'graceful' }).click()
  await page.waitForURL(/\/console\/keys\/[^/?]+$/)
  await page.check('#grace-3600')
  await page.click('#rotate-key')
  await page.locator('#secret-dialog[open]').waitFor()
  const fresh = await page.inputValue('#secret')
  const call = async (secret: string): Promise<number> => (await http(`${system.gateway}/tasks`, { headers: { 'x-api-key': secret } })).status
  t.equal(await call(fresh), 200, 'the new secret works')
  t.equal(await call(old), 200, 'and the old one, during the hour of grace')
  await page.goto(`${system.console}/keys`)
  t.equal(await page.locator('#keys tbody tr', { hasText: 'graceful' }).locator('.status').innerText(), 'Rotating', 'My keys shows the key rotating')
})

t.test('My sessions: this one marked, the others ended in one go', async (t) => {
  // Two contexts are two browsers: two sessions of the same user.
  const elsewhere = await openPage(await newContext(t, browser, consoleOrigin), `${system.console}/sign-in`)
  await signIn(elsewhere.page)
  const context = await newContext(t, browser, consoleOrigin)
  const { page, csp } = await openPage(context, `${system.console}/sign-in`)
  await signIn(page)

  await page.getByRole('link', { name: 'My sessions' }).click()
  await page.waitForURL(`${system.console}/sessions`)
  t.equal(await page.locator('#sessions tbody strong', { hasText: 'This session' }).count(), 1, 'this session is marked in words')
  t.match(await page.locator('#sessions tbody th[scope="row"]').first().innerText(), /^Chrome on Linux$/, 'the browser, summarised')
  await checkPage(t, page, csp, 'my-sessions')

  await page.click('#end-others')
  await page.locator('[role="status"]', { hasText: /^Ended \d+ other sessions?: they are signed out\.$/ }).waitFor()
  t.equal(await page.locator('#sessions tbody tr').count(), 1, 'only this session is left')
  await checkPage(t, page, csp, 'my-sessions-ended')

  await elsewhere.page.goto(`${system.console}/sessions`)
  t.equal(elsewhere.page.url(), `${system.console}/sign-in`, 'the other browser is signed out')
})

t.test('keyboard only: create, copy, close, with the focus kept in the dialog and given back', async (t) => {
  const context = await newContext(t, browser, consoleOrigin)
  const { page } = await openPage(context, `${system.console}/sign-in`)
  await signIn(page)
  await page.goto(`${system.console}/keys/new`)

  await tabTo(page, '#name')
  await page.keyboard.type('by-keyboard')
  await tabTo(page, 'input[name="permissions"][value="meetings:*"]')
  await page.keyboard.press('Space')
  await tabTo(page, '#create-key')
  await page.keyboard.press('Enter')
  await page.locator('#secret-dialog[open]').waitFor()
  const secret = await page.inputValue('#secret')

  const opened = await focusedElement(page)
  t.ok(opened?.inDialog, 'the dialog takes the focus when it opens', { opened })
  const walk: Array<FocusedElement | null> = []
  for (let press = 0; press < 8; press++) {
    await page.keyboard.press('Tab')
    walk.push(await focusedElement(page))
  }
  t.ok(walk.every((element) => element === null || element.inDialog), 'Tab never leaves the dialog for the page behind it', { walk })

  await tabTo(page, '#copy-secret')
  await page.keyboard.press('Enter')
  await page.locator('#copy-status', { hasText: 'Copied' }).waitFor()
  t.equal(await readClipboard(page), secret, 'Enter on Copy copies the secret')

  await page.keyboard.press('Escape')
  await page.locator('#secret-dialog').waitFor({ state: 'hidden' })
  const after = await focusedElement(page)
  t.ok(after !== null && !after.inDialog, 'closed, the dialog gives the focus back to the page', { after })
})

t.test('another site\'s form cannot make a key with the user\'s session', async (t) => {
  const context = await newContext(t, browser, consoleOrigin)
  const { page } = await openPage(context, `${system.console}/sign-in`)
  await signIn(page)
  const before = await ownKeyNames(page)

  const form = (name: string): string => `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Win a prize</title></head><body>
<form id="attack" method="post" action="${system.console}/keys">
<input type="hidden" name="name" value="${name}"><input type="hidden" name="permissions" value="tasks:*">
<input type="hidden" name="expiry" value="7"></form><script src="/submit.js"></script></body></html>`
  const pages = {
    '/same-site': { body: form('planted-same-site') },
    '/cross-site': { body: form('planted-cross-site') },
    '/submit.js': { type: 'text/javascript', body: 'document.getElementById("attack").submit()' }
  }
  const other = await servePages(t, pages)
  // Another port of 127.0.0.1 is the same site (the cookie goes along); localhost is another site.
  for (const [where, url] of [['another origin of the same site', `${other}/same-site`], ['another site', `${other.replace('127.0.0.1', 'localhost')}/cross-site`]] as const) {
    const answer = page.waitForResponse((response) => response.url() === `${system.console}/keys` && response.request().method() === 'POST')
    await page.goto(url)
    const refused = await answer
    t.equal(refused.status(), 403, `a form auto-posted from ${where} is refused`)
  }
  t.same(await ownKeyNames(page), before, 'and no key was made')
})

t.test('a key\'s page: its usage drawn without breaking the CSP, rotated and revoked by mouse', async (t) => {
  const context = await newContext(t, browser, consoleOrigin)
  const { page, csp } = await openPage(context, `${system.console}/sign-in`)
  await signIn(page)
  await page.goto(`${system.console}/keys/new`)
  await page.fill('#name', 'rotate-me')
  await page.check('input[name="permissions"][value="tasks:*"]')
  await page.click('#create-key')
  await page.locator('#secret-dialog[open]').waitFor()
  const first = await page.inputValue('#secret')
  t.equal((await http(`${system.gateway}/tasks`, { headers: { 'x-api-key': first } })).status, 200, 'the key works')

  await page.goto(`${system.console}/keys`)
  await page.getByRole('link', { name: 'rotate-me' }).click()
  await page.waitForURL(/\/console\/keys\/[^/?]+$/)
  const keyPage = page.url()
  await page.locator('svg.usage-chart').waitFor()
  t.equal(await page.locator('#usage caption').count(), 1, 'the usage table beside the chart')
  await checkPage(t, page, csp, 'key-detail')
  await page.getByRole('link', { name: 'the last 7 days' }).click()
  await page.waitForURL(`${keyPage}?range=7d`)
  t.equal(await page.locator('[aria-current="page"]').innerText(), 'the last 7 days', 'the period switched')
  await checkPage(t, page, csp, 'key-detail-7d')

  await page.check('#grace-0')
  await page.click('#rotate-key')
  await page.locator('#secret-dialog[open]').waitFor()
  const second = await page.inputValue('#secret')
  t.not(second, first, 'a new secret, in the create flow\'s dialog')
  await checkPage(t, page, csp, 'key-rotated')
  t.equal((await http(`${system.gateway}/tasks`, { headers: { 'x-api-key': first } })).status, 401, 'the old secret is refused at once')
  t.equal((await http(`${system.gateway}/tasks`, { headers: { 'x-api-key': second } })).status, 200, 'the new one works')
  await page.click('#secret-done')
  await page.waitForURL(keyPage)

  await page.fill('#confirm-name', 'not-its-name')
  await page.click('#revoke-key')
  await page.locator('#form-error').waitFor()
  t.match(await page.locator('#form-error').innerText(), /Nothing was revoked/, 'a wrong name is refused, said in an alert')
  // Chromium logs the refusal's 400 as a console error: expected here, and the only one allowed.
  const refusal = csp.consoleErrors.findIndex((error) => /status of 400 .*\/revoke\)$/.test(error))
  t.ok(refusal >= 0, 'the refusal is a 400')
  csp.consoleErrors.splice(refusal, 1)
  await checkPage(t, page, csp, 'key-revoke-refused')
  t.equal((await http(`${system.gateway}/tasks`, { headers: { 'x-api-key': second } })).status, 200, 'the key still works')

  await page.fill('#confirm-name', 'rotate-me')
  const clicked = performance.now()
  await page.click('#revoke-key')
  const refusedAfter = await pollUntil(async () => (await http(`${system.gateway}/tasks`, { headers: { 'x-api-key': second } })).status === 401,
    { since: clicked, timeoutMs: 1_000, intervalMs: 20 })
  t.ok(refusedAfter !== null, 'the gateway refuses the key within 1 s of the click', { refusedAfter })
  await page.waitForURL(keyPage)
  t.equal(await page.locator('#key-status').innerText(), 'Revoked', 'the page shows the key revoked')
  await checkPage(t, page, csp, 'key-revoked')
})

t.test('operators: users and roles, and a disabled owner\'s keys stop within a second', async (t) => {
  const context = await newContext(t, browser, consoleOrigin)
  const { page, csp } = await openPage(context, `${system.console}/sign-in`)
  await signIn(page, system.admin)
  for (const link of ['Overview', 'Users', 'Roles', 'All keys', 'Audit']) {
    t.equal(await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: link, exact: true }).count(), 1, `an operator sees ${link}`)
  }

  await page.getByRole('link', { name: 'Users', exact: true }).click()
  await page.waitForURL(`${system.console}/operator/users`)
  await checkPage(t, page, csp, 'operator-users')
  const owner = { email: 'owner@example.com', password: 'owner password 1' }
  await page.fill('#new-email', owner.email)
  await page.fill('#new-password', owner.password)
  await page.check('#new-role-staff')
  await page.click('#create-user')
  await page.locator('#users tbody th', { hasText: owner.email }).waitFor()

  // The new user makes a key of their own in another browser.
  const theirs = await openPage(await newContext(t, browser, consoleOrigin), `${system.console}/sign-in`)
  await signIn(theirs.page, owner)
  await theirs.page.goto(`${system.console}/keys/new`)
  t.equal(await theirs.page.getByRole('link', { name: 'Users', exact: true }).count(), 0, 'a user without operator permissions sees no operator link')
  await theirs.page.fill('#name', 'soon-stopped')
  await theirs.page.check('input[name="permissions"][value="tasks:*"]')
  await theirs.page.click('#create-key')
  await theirs.page.locator('#secret-dialog[open]').waitFor()
  const secret = await theirs.page.inputValue('#secret')
  const call = async (): Promise<number> => (await http(`${system.gateway}/tasks`, { headers: { 'x-api-key': secret } })).status
  t.equal(await call(), 200, 'their key works')
  const refused = await theirs.page.goto(`${system.console}/operator/users`)
  t.equal(refused?.status(), 403, 'and the Users page is refused to them')
  theirs.csp.consoleErrors.splice(0, theirs.csp.consoleErrors.length)

  await page.getByRole('link', { name: owner.email }).click()
  await page.waitForURL(/\/console\/operator\/users\/[^/]+$/)
  await checkPage(t, page, csp, 'operator-user')
  const clicked = performance.now()
  await page.click('#disable-user')
  const stoppedAfter = await pollUntil(async () => await call() === 401, { since: clicked, timeoutMs: 1_000, intervalMs: 20 })
  t.ok(stoppedAfter !== null, 'the disabled owner\'s key is refused at the gateway within 1 s of the click', { stoppedAfter })
  await page.locator('#user-status', { hasText: 'Disabled' }).waitFor()
  await theirs.page.goto(`${system.console}/keys`)
  t.equal(theirs.page.url(), `${system.console}/sign-in`, 'and the disabled user\'s console session is over')

  await page.getByRole('link', { name: 'Roles', exact: true }).click()
  await page.waitForURL(`${system.console}/operator/roles`)
  await checkPage(t, page, csp, 'operator-roles')
  await page.getByRole('link', { name: 'staff', exact: true }).click()
  await page.waitForURL(`${system.console}/operator/roles/staff`)
  await checkPage(t, page, csp, 'operator-role')

  await page.getByRole('link', { name: 'Overview', exact: true }).click()
  await page.waitForURL(`${system.console}/operator`)
  t.match(await page.locator('#disabled-owners-held').innerText(), /\b1 key\b/, 'the overview counts the disabled owner\'s key among those refused')
  await checkPage(t, page, csp, 'operator-overview')

  await page.getByRole('link', { name: 'All keys', exact: true }).click()
  await page.waitForURL(`${system.console}/operator/keys`)
  await page.selectOption('#status', 'revoked')
  await page.click('#apply-filters')
  await page.waitForURL(/status=revoked/)
  t.ok(await page.locator('#all-keys tbody tr').count() >= 1, 'All keys filtered to the revoked ones')
  t.equal(await page.locator('#all-keys tbody tr', { hasText: 'Active' }).count(), 0, 'and only those')
  await checkPage(t, page, csp, 'operator-all-keys')

  await page.getByRole('link', { name: 'Audit', exact: true }).click()
  await page.waitForURL(`${system.console}/operator/audit`)
  t.match(await page.locator('#trail-check').innerText(), /^The audit trail is intact: \d+ records checked\.$/, 'the audit page says the chain verifies')
  await page.fill('#filter-action', 'user.disable')
  await page.click('#apply-filters')
  await page.waitForURL(/action=user\.disable/)
  t.match(await page.locator('#audit-records tbody tr').first().innerText(), /user\.disable/, 'the disable is in the trail')
  await checkPage(t, page, csp, 'operator-audit')
})
