import { html, type Html } from '../html.js'
import type { OwnSession } from '../identity-client.js'
import { browserSummary } from '../user-agent.js'
import { alert, BASE, page, type NavUser } from './layout.js'
import { timeCell } from './time.js'

/** What the last form did, shown once on the page it came back to. */
export type SessionsNotice = { kind: 'status' | 'alert', text: string } | null

function notice (message: SessionsNotice): Html {
  if (message === null) return html``
  if (message.kind === 'alert') return alert(message.text)
  return html`<div class="notice" role="status" id="sessions-status"><p>${message.text}</p></div>`
}

function endForm (session: OwnSession, csrf: string): Html {
  // The current session is ended by signing out: identity refuses it here (409), so no button is offered.
  if (session.current) return html`<strong>This session</strong><span class="detail">sign out to end it</span>`
  return html`<form method="post" action="${BASE}/sessions/${encodeURIComponent(session.id)}/end">
<input type="hidden" name="_csrf" value="${csrf}">
<button type="submit" id="end-${session.id}" aria-label="End the session of ${browserSummary(session.user_agent)} from ${session.ip_address}">End</button>
</form>`
}

function row (session: OwnSession, csrf: string, now: number): Html {
  return html`<tr${session.current ? html` class="current"` : ''}>
<th scope="row"><abbr title="${session.user_agent}">${browserSummary(session.user_agent)}</abbr></th>
<td>${session.ip_address}</td>
<td>${timeCell(session.created_at, now)}</td>
<td>${timeCell(session.last_used_at, now)}</td>
<td>${endForm(session, csrf)}</td>
</tr>`
}

/** My sessions: where the user is signed in (console, CLI, any client), and ending the others. */
export function sessionsPage (options: { user: NavUser, sessions: OwnSession[] | null, notice: SessionsNotice, now: number }): string {
  const { sessions, now, user } = options
  const others = sessions?.filter((s) => !s.current).length ?? 0
  return page({
    title: 'My sessions',
    user,
    body: html`<h1>My sessions</h1>
${notice(options.notice)}
${sessions === null
  ? ''
  : html`<div class="table-wrap"><table id="sessions">
<caption>Where you are signed in, newest first</caption>
<thead><tr><th scope="col">Browser</th><th scope="col">IP address</th><th scope="col">Signed in</th><th scope="col">Last seen</th><th scope="col">Session</th></tr></thead>
<tbody>
${sessions.map((session) => row(session, user.csrf, now))}
</tbody>
</table></div>
${others === 0
  ? html`<p>You are signed in nowhere else.</p>`
  : html`<form method="post" action="${BASE}/sessions/end-others">
<input type="hidden" name="_csrf" value="${user.csrf}">
<button type="submit" id="end-others">End all other sessions (${others})</button>
</form>`}`}`
  })
}
