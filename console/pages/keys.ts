import { html, type Html } from '../html.js'
import type { OwnKey } from '../identity-client.js'
import { alert, BASE, page, type NavUser } from './layout.js'
import { timeCell } from './time.js'

const EXPIRING_WITHIN_MS = 7 * 86_400_000

export type KeyStatus = 'active' | 'expiring' | 'rotating' | 'expired' | 'revoked' | 'disabled'

export const STATUS_LABELS: Record<KeyStatus, string> = {
  active: 'Active',
  expiring: 'Expiring within 7 days',
  rotating: 'Rotating',
  expired: 'Expired',
  revoked: 'Revoked',
  disabled: 'Disabled'
}

/** What the table says of a key: identity's status, refined by what the owner should act on. */
export function keyStatus (key: OwnKey, now: number): KeyStatus {
  if (key.status !== 'active') return key.status
  if (key.rotation !== null) return 'rotating'
  if (key.expires_at !== null && Date.parse(key.expires_at) - now <= EXPIRING_WITHIN_MS) return 'expiring'
  return 'active'
}

function permissionsSummary (permissions: string[]): Html {
  if (permissions.length <= 3) return html`${permissions.join(', ')}`
  return html`${permissions.slice(0, 3).join(', ')} <span class="more">and ${permissions.length - 3} more</span>`
}

/** When a key was last used, on which route and from where. */
export function lastUse (key: OwnKey, now: number): Html {
  if (key.last_used_at === null) return html`never`
  return html`${timeCell(key.last_used_at, now)}${key.last_used_route === null ? '' : html`<span class="detail">${key.last_used_route}</span>`}${key.last_used_ip === null ? '' : html`<span class="detail">from ${key.last_used_ip}</span>`}`
}

function row (key: OwnKey, now: number): Html {
  const status = keyStatus(key, now)
  return html`<tr>
<th scope="row"><a href="${BASE}/keys/${encodeURIComponent(key.id)}">${key.name}</a></th>
<td><code>${key.key_prefix}</code></td>
<td>${permissionsSummary(key.permissions)}</td>
<td>${timeCell(key.created_at, now)}</td>
<td>${timeCell(key.expires_at, now)}</td>
<td>${lastUse(key, now)}</td>
<td><span class="status status-${status}">${STATUS_LABELS[status]}</span></td>
</tr>`
}

/** My keys: every key of the user's, however made; never a secret (identity gives none). */
export function keysPage (options: { user: NavUser, keys: OwnKey[] | null, error: string | null, now: number }): string {
  const { keys, now } = options
  return page({
    title: 'My keys',
    user: options.user,
    body: html`<h1>My keys</h1>
${alert(options.error)}
<p><a class="button" href="${BASE}/keys/new">Create a key</a></p>
${keys === null
  ? ''
  : keys.length === 0
    ? html`<p>You have no API keys yet.</p>`
    : html`<div class="table-wrap"><table id="keys">
<caption>Your API keys (the secret is shown only once, when a key is created)</caption>
<thead><tr><th scope="col">Name</th><th scope="col">Prefix</th><th scope="col">Permissions</th><th scope="col">Created</th><th scope="col">Expires</th><th scope="col">Last used</th><th scope="col">Status</th></tr></thead>
<tbody>
${keys.map((key) => row(key, now))}
</tbody>
</table></div>`}`
  })
}
