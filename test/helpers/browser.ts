import { mkdirSync, readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core'
import type { Result as AxeResult } from 'axe-core'
import type { Teardown } from './temp.js'
import { repoPath } from './repo-root.js'

/**
 * A real browser for the suites that test what a person sees: Debian's Chromium (CI
 * installs it; playwright-core brings no browser of its own), driven headless.
 * One browser per suite, a fresh context per test.
 */

export const CHROMIUM = '/usr/bin/chromium'

/** A loaded 2-core machine starts a browser and paints a page slowly: wait long, never sleep. */
const ACTION_TIMEOUT_MS = 30_000
const LAUNCH_TIMEOUT_MS = 90_000

export const VIEWPORT = { width: 1280, height: 800 }

/** The WCAG levels the console answers for (A and AA, 2.0 and 2.1). */
export const WCAG_TAGS = ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa']

/** One browser for the whole suite, closed when `t` ends. */
export async function launchBrowser (t: Teardown): Promise<Browser> {
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    timeout: LAUNCH_TIMEOUT_MS,
    // No sandbox: CI runs as root, where Chromium's sandbox refuses to start.
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking']
  })
  t.teardown(async () => { await browser.close() })
  return browser
}

/**
 * A fresh context (cookies, storage, permissions of its own) for one test, closed when
 * `t` ends, allowed to read and write the clipboard on `origin` as a person who clicked
 * "Copy" and pasted would.
 */
export async function newContext (t: Teardown, browser: Browser, origin: string): Promise<BrowserContext> {
  const context = await browser.newContext({ viewport: VIEWPORT })
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin })
  context.setDefaultTimeout(ACTION_TIMEOUT_MS)
  context.setDefaultNavigationTimeout(ACTION_TIMEOUT_MS)
  t.teardown(async () => { await context.close() })
  return context
}

export interface CspViolation {
  directive: string
  blockedURI: string
  sourceFile: string
  line: number
  sample: string
}

export interface CspWatch {
  /** Every `securitypolicyviolation` event of every document the page has shown. */
  violations: CspViolation[]
  /** Console errors and uncaught exceptions (Chromium also logs each CSP refusal here). */
  consoleErrors: string[]
  /** Resolves once every violation the current document has seen so far has arrived here. */
  settled: () => Promise<void>
}

const CSP_BINDING = 'portierReportCspViolation'

/**
 * Reports each CSP violation to the test through a binding. The script runs before the
 * page's own (and outside its policy, as DevTools scripts do), in every document the
 * page loads, so a form post that lands on a new page is watched too. Each document
 * counts what it reported, under a random name, so that `settled` knows what to wait for.
 */
const CSP_WATCH_SCRIPT = `(() => {
  const documentId = Math.random().toString(36).slice(2)
  let seen = 0
  window.portierCspSeen = () => ({ documentId, seen })
  document.addEventListener('securitypolicyviolation', (event) => {
    seen += 1
    window.${CSP_BINDING}(documentId, {
      directive: event.effectiveDirective,
      blockedURI: event.blockedURI,
      sourceFile: event.sourceFile,
      line: event.lineNumber,
      sample: event.sample
    })
  }, true)
})()`

/**
 * Watches `page` for Content-Security-Policy violations and console errors. Call it
 * before the page navigates: what happened earlier is not seen.
 */
export async function collectCspViolations (page: Page): Promise<CspWatch> {
  const violations: CspViolation[] = []
  const consoleErrors: string[] = []
  const received = new Map<string, number>()
  let arrived: () => void = () => {}
  await page.exposeBinding(CSP_BINDING, (_source, documentId: string, violation: CspViolation) => {
    violations.push(violation)
    received.set(documentId, (received.get(documentId) ?? 0) + 1)
    arrived()
  })
  await page.addInitScript(CSP_WATCH_SCRIPT)
  page.on('console', (message) => {
    if (message.type() === 'error') consoleErrors.push(`${message.text()} (${message.location().url})`)
  })
  page.on('pageerror', (error) => { consoleErrors.push(`uncaught: ${error.message}`) })

  const settled = async (): Promise<void> => {
    // A violation event is queued as a task: one more task in the page lets it fire.
    const { documentId, seen } = await page.evaluate<{ documentId: string, seen: number }>(
      'new Promise((resolve) => setTimeout(() => resolve(window.portierCspSeen()), 0))')
    while ((received.get(documentId) ?? 0) < seen) {
      await new Promise<void>((resolve) => { arrived = resolve })
    }
  }
  return { violations, consoleErrors, settled }
}

export interface OpenedPage { page: Page, csp: CspWatch }

/** A new page in `context`, watched for CSP violations from its first byte, loaded from `url`. */
export async function openPage (context: BrowserContext, url: string): Promise<OpenedPage> {
  const page = await context.newPage()
  const csp = await collectCspViolations(page)
  const response = await page.goto(url, { waitUntil: 'load' })
  if (response === null) throw new Error(`no answer loading ${url}`)
  return { page, csp }
}

export interface AxeViolation {
  id: string
  impact: string | null
  help: string
  /** A CSS selector and the HTML of each element at fault. */
  nodes: Array<{ target: string, html: string }>
}

const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8')

/**
 * axe-core's WCAG 2.0/2.1 A and AA checks on the page as it is now. axe is evaluated
 * through DevTools, like any `page.evaluate`, rather than added as a <script>: the
 * page's `script-src 'self'` would rightly refuse an inline script, and turning the
 * policy off for the context (bypassCSP) would blind the CSP watch on the same page.
 * Evaluated code is outside the page's policy without changing it, so the pages' own
 * scripts stay under it and the watch stays meaningful.
 */
export async function runAxe (page: Page): Promise<AxeViolation[]> {
  const loaded = await page.evaluate<boolean>('typeof window.axe === "object"')
  if (!loaded) await page.evaluate(AXE_SOURCE)
  const options = JSON.stringify({ runOnly: { type: 'tag', values: WCAG_TAGS }, resultTypes: ['violations'] })
  const violations = await page.evaluate<AxeResult[]>(`axe.run(document, ${options}).then((results) => results.violations)`)
  return violations.map((violation) => ({
    id: violation.id,
    impact: violation.impact ?? null,
    help: violation.help,
    nodes: violation.nodes.map((node) => ({ target: node.target.join(' '), html: node.html }))
  }))
}

/** What the clipboard holds, read as the page's own script would after a paste. */
export async function readClipboard (page: Page): Promise<string> {
  return await page.evaluate<string>('navigator.clipboard.readText()')
}

export interface FocusedElement {
  tag: string
  id: string
  /** Its accessible-name candidates, for messages: aria-label, else its text. */
  label: string
  /** Whether it sits inside an open <dialog> or a role="dialog" element. */
  inDialog: boolean
}

const FOCUSED_SCRIPT = `(() => {
  const element = document.activeElement
  if (element === null || element === document.body) return null
  return {
    tag: element.tagName.toLowerCase(),
    id: element.id,
    label: (element.getAttribute('aria-label') ?? element.textContent ?? '').trim().replace(/\\s+/g, ' ').slice(0, 80),
    inDialog: element.closest('dialog[open], [role="dialog"]') !== null
  }
})()`

/** The element that has the keyboard focus, or null when nothing (the body) has. */
export async function focusedElement (page: Page): Promise<FocusedElement | null> {
  return await page.evaluate<FocusedElement | null>(FOCUSED_SCRIPT)
}

/**
 * Keyboard only: presses `key` (Tab, or Shift+Tab) `count` times and returns where the
 * focus went after each press.
 */
export async function tabOrder (page: Page, count: number, key: 'Tab' | 'Shift+Tab' = 'Tab'): Promise<Array<FocusedElement | null>> {
  const order: Array<FocusedElement | null> = []
  for (let press = 0; press < count; press++) {
    await page.keyboard.press(key)
    order.push(await focusedElement(page))
  }
  return order
}

/**
 * Keyboard only: presses Tab until the focused element matches `selector`, as a person
 * reaching a control without a mouse. Throws after `max` presses, naming the path taken.
 */
export async function tabTo (page: Page, selector: string, max = 40): Promise<Array<FocusedElement | null>> {
  const path: Array<FocusedElement | null> = []
  for (let press = 0; press < max; press++) {
    await page.keyboard.press('Tab')
    path.push(await focusedElement(page))
    if (await page.evaluate<boolean>(`document.activeElement === document.querySelector(${JSON.stringify(selector)})`)) return path
  }
  throw new Error(`${selector} not reached in ${max} Tab presses; focus went ${JSON.stringify(path.map((f) => f?.id ?? f?.tag ?? 'body'))}`)
}

/** Set to 1 to (re)write the console's screenshots in docs/console/. */
export const SCREENSHOTS_ENV = 'PORTIER_SCREENSHOTS'

/**
 * Saves the viewport as docs/console/<name>.png, only when PORTIER_SCREENSHOTS=1: the
 * committed pictures change when someone means them to, not on every run.
 */
export async function saveScreenshot (page: Page, name: string): Promise<string | null> {
  if (process.env[SCREENSHOTS_ENV] !== '1') return null
  const dir = repoPath('docs', 'console')
  mkdirSync(dir, { recursive: true })
  const path = join(dir, `${name}.png`)
  await page.screenshot({ path, fullPage: false })
  return path
}
