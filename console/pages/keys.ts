import { html, type Html } from '../html.js'
import type { KeyUsage, OwnKey } from '../identity-client.js'
import { alert, BASE, page, type NavUser } from './layout.js'
import { sparkline } from './sparkline.js'
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

export function permissionsSummary (permissions: string[]): Html {
  if (permissions.length <= 3) return html`${permissions.join(', ')}`
  return html`${permissions.slice(0, 3).join(', ')} <span class="more">and ${permissions.length - 3} more</span>`
}

/**
 * How people recognise a key (as Stripe and GitHub show theirs): its prefix and the last
 * 4 characters of its text; just the prefix for a key made before those were kept.
 */
export function keyHint (key: Pick<OwnKey, 'key_prefix' | 'key_last4'>): Html {
  return html`<code>${key.key_prefix}${key.key_last4 === null ? '' : `…${key.key_last4}`}</code>`
}

/** When a key was last used, on which route and from where. */
export function lastUse (key: OwnKey, now: number): Html {
  if (key.last_used_at === null) return html`never`
  return html`${timeCell(key.last_used_at, now)}${key.last_used_route === null ? '' : html`<span class="detail">${key.last_used_route}</span>`}${key.last_used_ip === null ? '' : html`<span class="detail">from ${key.last_used_ip}</span>`}`
}

/**
 * The keys' recent requests, for the table's column of sparklines. A key absent from
 * `ofKey` was not asked about (revoked, expired, disabled: it makes no requests now;
 * or beyond the page's cap of calls); null: identity could not say.
 */
export interface RecentUsage { heading: string, period: string, ofKey: ReadonlyMap<string, KeyUsage | null> }

function recentCell (key: OwnKey, recent: RecentUsage): Html {
  if (!recent.ofKey.has(key.id)) {
    return html`<td><span aria-hidden="true">—</span><span class="visually-hidden">${key.status === 'active' ? 'not shown here: see the key\'s page' : 'not in use'}</span></td>`
  }
  const usage = recent.ofKey.get(key.id) ?? null
  if (usage === null) return html`<td class="detail">usage unavailable</td>`
  return html`<td class="recent">${sparkline(usage, { id: `recent-${key.id}`, period: recent.period })}</td>`
}

function row (key: OwnKey, now: number, recent: RecentUsage | undefined): Html {
  const status = keyStatus(key, now)
  return html`<tr>
<th scope="row"><a href="${BASE}/keys/${encodeURIComponent(key.id)}">${key.name}</a></th>
<td>${keyHint(key)}</td>
<td>${permissionsSummary(key.permissions)}</td>
<td>${timeCell(key.created_at, now)}</td>
<td>${timeCell(key.expires_at, now)}</td>
<td>${lastUse(key, now)}</td>
${recent === undefined ? '' : recentCell(key, recent)}
<td><span class="status status-${status}">${STATUS_LABELS[status]}</span></td>
</tr>`
}

/** My keys: every key of the user's, however made; never a secret (identity gives none). */
export function keysPage (options: { user: NavUser, keys: OwnKey[] | null, recent?: RecentUsage, error: string | null, now: number }): string {
  const { keys, now, recent } = options
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
<thead><tr><th scope="col">Name</th><th scope="col">Prefix</th><th scope="col">Permissions</th><th scope="col">Created</th><th scope="col">Expires</th><th scope="col">Last used</th>${recent === undefined ? '' : html`<th scope="col">${recent.heading}</th>`}<th scope="col">Status</th></tr></thead>
<tbody>
${keys.map((key) => row(key, now, recent))}
</tbody>
</table></div>`}`
  })
}
