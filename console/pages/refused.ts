import { html } from '../html.js'
import { BASE, page } from './layout.js'

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

export function notFoundPage (): string {
  return page({ title: 'Not found', user: null, body: html`<h1>Page not found</h1><p><a href="${BASE}/keys">Back to the console</a></p>` })
}
