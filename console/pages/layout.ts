import { html, type Html } from '../html.js'
import { BASE } from '../base-path.js'
import type { OperatorSection } from '../operator/access.js'

export { BASE } from '../base-path.js'

/** The signed-in user as the page shell shows them: e-mail, the sign-out form's CSRF token, and the operator pages they may open. */
export interface NavUser { email: string, csrf: string, sections: readonly OperatorSection[] }

export interface PageOptions {
  title: string
  /** Null on the sign-in page and on refusals. */
  user: NavUser | null
  body: Html
}

/** The page shell: landmarks, a skip link, the one style sheet and the one script, both from the console itself. */
export function page (options: PageOptions): string {
  const { title, user, body } = options
  return '<!doctype html>\n' + html`<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} · Portier console</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="${BASE}/assets/console.css">
<script src="${BASE}/assets/console.js" defer></script>
</head>
<body>
<a class="skip-link" href="#main">Skip to content</a>
<header class="banner">
<p class="brand">Portier console</p>
${user === null
  ? ''
  : html`<nav aria-label="Console"><ul>
<li><a href="${BASE}/keys">My keys</a></li>
<li><a href="${BASE}/keys/new">Create a key</a></li>
<li><a href="${BASE}/sessions">My sessions</a></li>
</ul>
${user.sections.length === 0
  ? ''
  : html`<ul class="operator-nav" aria-label="Operator">
${user.sections.map((section) => html`<li><a href="${section.path}">${section.label}</a></li>`)}
</ul>`}</nav>
<form class="sign-out" method="post" action="${BASE}/sign-out">
<input type="hidden" name="_csrf" value="${user.csrf}">
<span class="who">${user.email}</span>
<button type="submit" id="sign-out">Sign out</button>
</form>`}
</header>
<main id="main" tabindex="-1">
${body}
</main>
</body>
</html>
`.text
}

/** A refusal or failure, as an alert at the top of a form. */
export function alert (message: string | null): Html {
  return message === null ? html`` : html`<div class="alert" role="alert" id="form-error"><p>${message}</p></div>`
}
