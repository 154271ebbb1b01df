import { html } from '../html.js'
import { BASE, page, type NavUser } from './layout.js'

/** What a refused state-changing request (another site, a missing or wrong CSRF token) answers. */
export function refusedPage (reason: string): string {
  return page({
    title: 'Request refused',
    user: null,
    body: html`<h1>Request refused</h1>
<div role="alert"><p>The console refused this request: ${reason}. Nothing was changed.</p></div>
<p><a href="${BASE}/keys">Back to the console</a></p>`
  })
}

/** An operator page opened by a user whose roles do not grant its operator permission. */
export function forbiddenPage (user: NavUser, permission: string): string {
  return page({
    title: 'Not permitted',
    user,
    body: html`<h1>Not permitted</h1>
<div role="alert"><p>This page is for operators holding <code>${permission}</code>, which your roles do not grant.</p></div>
<p><a href="${BASE}/keys">Back to My keys</a></p>`
  })
}

export function notFoundPage (): string {
  return page({ title: 'Not found', user: null, body: html`<h1>Page not found</h1><p><a href="${BASE}/keys">Back to the console</a></p>` })
}
