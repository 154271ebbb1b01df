import { html } from '../html.js'
import { FORM_TOKEN_FIELD } from '../form-once.js'
import type { KeyUsage, OwnKey, UsageRange } from '../identity-client.js'
import { keyHint, keyStatus, lastUse, STATUS_LABELS } from './keys.js'
import { alert, BASE, page, type NavUser } from './layout.js'
import { timeCell } from './time.js'
import { usageChart, usageTable } from './usage-chart.js'

/** The periods the usage can be shown for: how far back, and the width of a bar. */
export const USAGE_RANGES = {
  '24h': { label: 'the last 24 hours', ms: 86_400_000, step: 'hour' },
  '7d': { label: 'the last 7 days', ms: 7 * 86_400_000, step: 'day' },
  '30d': { label: 'the last 30 days', ms: 30 * 86_400_000, step: 'day' }
} as const
export type UsageRangeName = keyof typeof USAGE_RANGES

/** What identity is asked for to show `range` up to `at`: the key's page and the My keys sparkline ask alike, so their numbers agree. */
export function usageWindow (range: UsageRangeName, at: number): UsageRange {
  const { ms, step } = USAGE_RANGES[range]
  return { from: new Date(at - ms).toISOString(), to: new Date(at).toISOString(), step }
}

/** How long the old secret keeps working after a rotation; 1 hour is chosen, so running clients have time to switch. */
export const GRACE_CHOICES: ReadonlyArray<{ seconds: number, label: string }> = [
  { seconds: 0, label: 'Now: the old secret stops at once' },
  { seconds: 3600, label: '1 hour' },
  { seconds: 86_400, label: '24 hours' },
  { seconds: 7 * 86_400, label: '7 days' }
]
export const DEFAULT_GRACE_SECONDS = 3600

export interface KeyDetailOptions {
  user: NavUser
  key: OwnKey
  range: UsageRangeName
  /** null when identity could not give it: the page says so and still offers rotate and revoke. */
  usage: KeyUsage | null
  error: string | null
  /** Which form the error is about: its field points at the alert. */
  errorOf: 'rotate' | 'revoke' | null
  /** The rotate form's one-time token. */
  rotateToken: string
  now: number
}

export function keyDetailPage (options: KeyDetailOptions): string {
  const { key, now, range, usage } = options
  const status = keyStatus(key, now)
  const path = `${BASE}/keys/${encodeURIComponent(key.id)}`
  const live = key.status !== 'revoked'
  const period = USAGE_RANGES[range].label
  return page({
    title: `Key ${key.name}`,
    user: options.user,
    body: html`<h1>Key “${key.name}”</h1>
${alert(options.error)}
<dl class="facts" id="key-facts">
<dt>Name</dt><dd>${key.name}</dd>
<dt>Prefix</dt><dd>${keyHint(key)}</dd>
<dt>Permissions</dt><dd>${key.permissions.map((p, i) => html`${i > 0 ? ', ' : ''}<code>${p}</code>`)}</dd>
<dt>Created</dt><dd>${timeCell(key.created_at, now)}</dd>
<dt>Expires</dt><dd>${timeCell(key.expires_at, now)}</dd>
<dt>Last used</dt><dd>${lastUse(key, now)}</dd>
<dt>Status</dt><dd><span class="status status-${status}" id="key-status">${STATUS_LABELS[status]}</span>${key.rotation === null ? '' : html`<span class="detail">the old secret works until ${timeCell(key.rotation.grace_until, now)}</span>`}</dd>
</dl>
<section aria-labelledby="usage-title">
<h2 id="usage-title">Usage</h2>
<nav aria-label="Usage period"><ul class="periods">
${(Object.keys(USAGE_RANGES) as UsageRangeName[]).map((name) => html`<li><a href="${path}?range=${name}"${name === range ? html` aria-current="page"` : ''}>${USAGE_RANGES[name].label}</a></li>`)}
</ul></nav>
${usage === null ? html`<p>The usage could not be read from identity. Try again in a moment.</p>` : html`${usageChart(usage, period)}${usageTable(usage, period)}`}
</section>
${live
  ? html`<section aria-labelledby="rotate-title">
<h2 id="rotate-title">Rotate</h2>
<form method="post" action="${path}/rotate" class="stack">
<input type="hidden" name="_csrf" value="${options.user.csrf}">
<input type="hidden" name="${FORM_TOKEN_FIELD}" value="${options.rotateToken}">
<fieldset${options.errorOf === 'rotate' ? html` aria-describedby="form-error"` : ''}>
<legend>A new secret; the old one keeps working</legend>
${GRACE_CHOICES.map((choice) => html`<p class="choice"><input type="radio" id="grace-${choice.seconds}" name="grace_seconds" value="${choice.seconds}"${choice.seconds === DEFAULT_GRACE_SECONDS ? html` checked` : ''}>
<label for="grace-${choice.seconds}">${choice.label}</label></p>`)}
</fieldset>
<p><button type="submit" id="rotate-key">Rotate key</button></p>
</form>
</section>
<section aria-labelledby="revoke-title">
<h2 id="revoke-title">Revoke</h2>
<form method="post" action="${path}/revoke" class="stack">
<input type="hidden" name="_csrf" value="${options.user.csrf}">
<p>Revoking is final: every request with this key is refused from then on.</p>
<p><label for="confirm-name">Type the key's name, ${key.name}, to confirm</label>
<input id="confirm-name" name="confirm_name" required autocomplete="off" spellcheck="false"${options.errorOf === 'revoke' ? html` aria-describedby="form-error" aria-invalid="true"` : ''}></p>
<p><button type="submit" id="revoke-key" class="danger">Revoke key</button></p>
</form>
</section>`
  : ''}
<p><a href="${BASE}/keys">Back to my keys</a></p>`
  })
}
