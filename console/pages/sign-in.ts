import { html } from '../html.js'
import { alert, BASE, page } from './layout.js'

/** The sign-in form; `error` shown as an alert, the e-mail kept (never the password). */
export function signInPage (options: { csrf: string, error: string | null, email: string }): string {
  return page({
    title: 'Sign in',
    user: null,
    body: html`<h1>Sign in</h1>
${alert(options.error)}
<form method="post" action="${BASE}/sign-in" class="stack"${options.error === null ? '' : html` aria-describedby="form-error"`}>
<input type="hidden" name="_csrf" value="${options.csrf}">
<p><label for="email">E-mail</label>
<input id="email" name="email" type="email" autocomplete="username" required value="${options.email}"${options.error === null ? html` autofocus` : ''}></p>
<p><label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="current-password" required></p>
<p><button type="submit" id="sign-in">Sign in</button></p>
</form>`
  })
}
