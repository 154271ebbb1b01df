import t from 'tap'
import { collectCspViolations, focusedElement, launchBrowser, newContext, openPage, readClipboard, runAxe, tabOrder, tabTo } from '../helpers/browser.js'
import { servePages } from '../helpers/page-server.js'

// The browser harness proves itself on pages of its own, so that the console's browser
// suites fail only for what the console does: each check is shown to catch a fault
// and to stay silent on a clean page.

const POLICY = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
const withPolicy = { 'content-security-policy': POLICY }

const page = (title: string, body: string, lang = ' lang="en"'): string =>
  `<!doctype html><html${lang}><head><meta charset="utf-8"><title>${title}</title><link rel="stylesheet" href="/style.css"></head><body>${body}</body></html>`

const GOOD_BODY = `<main><h1>A good page</h1>
<form><label for="name">Name</label> <input id="name" name="name">
<button id="copy" type="button" data-copy="the-copied-secret">Copy</button></form>
<p id="status" role="status"></p>
<a id="next" href="/inline">The next page</a></main>
<script src="/app.js"></script>`

const APP_SCRIPT = `const copy = document.getElementById('copy')
copy.addEventListener('click', async () => {
  await navigator.clipboard.writeText(copy.dataset.copy)
  document.getElementById('status').textContent = 'Copied'
})`

const origin = await servePages(t, {
  '/good': { body: page('A good page', GOOD_BODY), headers: withPolicy },
  // No language, an unlabelled field, an empty link: three WCAG A failures.
  '/broken': { body: page('', '<main><input id="q"><a href="/good"></a></main>', ''), headers: withPolicy },
  '/inline': { body: page('Inline', '<main><h1>Inline</h1><script>document.title = "the inline script ran"</script></main>'), headers: withPolicy },
  '/app.js': { type: 'text/javascript', body: APP_SCRIPT },
  '/style.css': { type: 'text/css', body: 'body { font-family: sans-serif; color: #111; background: #fff }' }
})

const browser = await launchBrowser(t)

t.test('axe finds the violations of a broken page and none on a good one', async (t) => {
  const context = await newContext(t, browser, origin)
  const broken = await openPage(context, `${origin}/broken`)
  const found = (await runAxe(broken.page)).map((violation) => violation.id)
  t.ok(found.includes('html-has-lang'), 'the missing language is found', { found })
  t.ok(found.includes('label'), 'the unlabelled field is found', { found })
  t.ok(found.includes('link-name'), 'the empty link is found', { found })

  const good = await openPage(context, `${origin}/good`)
  t.same(await runAxe(good.page), [], 'no violation on the good page')
  await good.csp.settled()
  t.same(good.csp.violations, [], 'running axe under the page\'s policy breaks none of it')
  t.same(good.csp.consoleErrors, [], 'nor logs an error')
})

t.test('the CSP watch catches an inline script the policy blocks, and reports nothing on a clean page', async (t) => {
  const context = await newContext(t, browser, origin)
  const inline = await openPage(context, `${origin}/inline`)
  await inline.csp.settled()
  t.equal(inline.csp.violations.length, 1, 'one violation', { violations: inline.csp.violations })
  t.match(inline.csp.violations[0], { directive: 'script-src-elem', blockedURI: 'inline' }, 'the inline script, refused by script-src')
  t.equal(await inline.page.title(), 'Inline', 'the script did not run')
  t.match(inline.csp.consoleErrors.join('\n'), /Content Security Policy/, 'Chromium logs the refusal as a console error too')

  const clean = await openPage(context, `${origin}/good`)
  await clean.csp.settled()
  t.same(clean.csp.violations, [], 'no violation on a page whose scripts come from its own origin')
  t.same(clean.csp.consoleErrors, [], 'and no console error')

  await clean.page.click('#next')
  await clean.page.waitForURL(`${origin}/inline`)
  await clean.csp.settled()
  t.equal(clean.csp.violations.length, 1, 'the watch follows the page to the next document it loads')
})

t.test('a watch added to an open page sees the documents it loads next', async (t) => {
  // collectCspViolations sees only what comes after it: this is why openPage adds it before loading.
  const context = await newContext(t, browser, origin)
  const page = await context.newPage()
  await page.goto(`${origin}/good`)
  const csp = await collectCspViolations(page)
  await page.goto(`${origin}/inline`)
  await csp.settled()
  t.equal(csp.violations.length, 1, 'added before a navigation, it sees that navigation\'s document')
})

t.test('a Copy button\'s text can be read back from the clipboard', async (t) => {
  const context = await newContext(t, browser, origin)
  const { page, csp } = await openPage(context, `${origin}/good`)
  await page.click('#copy')
  await page.locator('#status', { hasText: 'Copied' }).waitFor()
  t.equal(await readClipboard(page), 'the-copied-secret', 'the clipboard holds what the page copied')
  await csp.settled()
  t.same(csp.violations, [], 'copying breaks no policy')
})

t.test('keyboard only: Tab walks the controls in order, Shift+Tab walks back, Enter activates', async (t) => {
  const context = await newContext(t, browser, origin)
  const { page } = await openPage(context, `${origin}/good`)
  t.equal(await focusedElement(page), null, 'nothing has the focus on load')
  const forward = await tabOrder(page, 3)
  t.same(forward.map((element) => element?.id), ['name', 'copy', 'next'], 'field, button, link')
  const back = await tabOrder(page, 2, 'Shift+Tab')
  t.same(back.map((element) => element?.id), ['copy', 'name'], 'and back')

  await page.keyboard.press('Shift+Tab')
  const path = await tabTo(page, '#copy')
  t.equal(path.at(-1)?.id, 'copy', 'tabTo stops on the control it was asked for')
  await page.keyboard.press('Enter')
  await page.locator('#status', { hasText: 'Copied' }).waitFor()
  t.equal(await readClipboard(page), 'the-copied-secret', 'Enter on the button copies, as a click does')
  await t.rejects(tabTo(page, '#nowhere', 5), /#nowhere not reached in 5 Tab presses/, 'a control Tab never reaches fails the test, naming the path')
})
