import type { Test } from 'tap'
import { buildConsole } from '../../console/app.js'
import { loadConsoleConfig } from '../../console/config.js'
import { randomBytes } from 'node:crypto'
import type { FastifyInstance } from 'fastify'
import { startStack, type Stack, type TestGateway } from './gateway.js'

/** The console on loopback port 0 in front of a test identity, closed at the end of the test. */
export async function startConsole (t: Test, options: { identityPublicUrl: string, identityAdminUrl: string, now?: () => number, secureCookie?: boolean, logStream?: NodeJS.WritableStream }): Promise<{ url: string, app: FastifyInstance }> {
  const config = loadConsoleConfig({
    CONSOLE_IDENTITY_PUBLIC_URL: options.identityPublicUrl,
    CONSOLE_IDENTITY_ADMIN_URL: options.identityAdminUrl,
    CONSOLE_COOKIE_SECRET: randomBytes(32).toString('hex'),
    CONSOLE_SECURE_COOKIE: String(options.secureCookie ?? false),
    // The test gateway, on loopback, is the console's proxy.
    CONSOLE_TRUST_PROXY: '127.0.0.1',
    // Quiet unless a test reads the lines.
    LOG_LEVEL: options.logStream !== undefined ? 'info' : 'silent'
  })
  const app = await buildConsole(config, {
    ...(options.now !== undefined ? { now: options.now } : {}),
    ...(options.logStream !== undefined ? { logStream: options.logStream } : {})
  })
  t.teardown(() => app.close())
  const url = await app.listen({ host: '127.0.0.1', port: 0 })
  return { url, app }
}

export interface PageAnswer {
  status: number
  headers: Headers
  text: string
  /** Every Set-Cookie line of the answer. */
  setCookies: string[]
}

/**
 * A browser, as far as the console can tell: a cookie jar, forms posted urlencoded
 * with the site's own Origin and `Sec-Fetch-Site: same-origin` unless told otherwise,
 * redirects not followed (the tests read them).
 */
export class Browser {
  readonly cookies = new Map<string, string>()
  constructor (readonly origin: string) {}

  async request (method: string, path: string, options: { form?: Record<string, string | string[]>, headers?: Record<string, string> } = {}): Promise<PageAnswer> {
    const headers: Record<string, string> = { accept: 'text/html,application/xhtml+xml,*/*;q=0.8', 'user-agent': 'console-test-browser' }
    if (this.cookies.size > 0) headers.cookie = [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; ')
    let body: string | undefined
    if (options.form !== undefined) {
      const params = new URLSearchParams()
      for (const [name, value] of Object.entries(options.form)) for (const item of [value].flat()) params.append(name, item)
      body = params.toString()
      headers['content-type'] = 'application/x-www-form-urlencoded'
      headers.origin = this.origin
      headers['sec-fetch-site'] = 'same-origin'
    }
    Object.assign(headers, options.headers)
    for (const [name, value] of Object.entries(headers)) if (value === '') Reflect.deleteProperty(headers, name)
    const response = await fetch(`${this.origin}${path}`, { method, headers, redirect: 'manual', ...(body !== undefined ? { body } : {}) })
    const setCookies = response.headers.getSetCookie()
    for (const line of setCookies) {
      const [pair = ''] = line.split(';')
      const at = pair.indexOf('=')
      const name = pair.slice(0, at)
      const value = pair.slice(at + 1)
      if (value === '' || /max-age=0|expires=thu, 01 jan 1970/i.test(line)) this.cookies.delete(name)
      else this.cookies.set(name, value)
    }
    return { status: response.status, headers: response.headers, text: await response.text(), setCookies }
  }

  async get (path: string, headers: Record<string, string> = {}): Promise<PageAnswer> {
    return await this.request('GET', path, { headers })
  }

  async post (path: string, form: Record<string, string | string[]>, headers: Record<string, string> = {}): Promise<PageAnswer> {
    return await this.request('POST', path, { form, headers })
  }
}

/** The CSRF token of the first form on a page. */
export function csrfOf (page: PageAnswer): string {
  const match = /name="_csrf" value="([^"]+)"/.exec(page.text)
  if (match?.[1] === undefined) throw new Error(`no CSRF token on the page (status ${page.status})`)
  return match[1]
}

/** The one-time token of the create-key form on a page (its hidden `form_token`). */
export function formTokenOf (page: PageAnswer): string {
  const match = /name="form_token" value="([^"]+)"/.exec(page.text)
  if (match?.[1] === undefined) throw new Error(`no form token on the page (status ${page.status})`)
  return match[1]
}

/**
 * A stack whose identity believes the console's X-Forwarded-For (loopback), the console
 * in front of it, and a gateway forwarding /console to the console.
 */
export async function startConsoleStack (t: Test): Promise<{ s: Stack, gateway: TestGateway, console: { url: string, app: FastifyInstance } }> {
  const s = await startStack(t, { env: { IDENTITY_TRUST_PROXY: '127.0.0.1' } })
  const console = await startConsole(t, { identityPublicUrl: s.publicUrl, identityAdminUrl: s.adminUrl, now: s.clock.now })
  const gateway = await s.addGateway({ consoleUrl: console.url })
  return { s, gateway, console }
}

/** The identity tokens a browser's console cookie holds (the test reads the cookie as the console does). */
export function tokensOf (console: { app: FastifyInstance }, browser: Browser, cookieName = 'portier-console'): { access: string, refresh: string } {
  const session = console.app.decodeSecureSession(decodeURIComponent(browser.cookies.get(cookieName) ?? ''))
  const tokens = session?.get('tokens')
  if (tokens === undefined) throw new Error('the browser is not signed in')
  return tokens
}
