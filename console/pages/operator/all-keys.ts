import { html, type Html } from '../../html.js'
import { KEY_FILTER_STATUSES, KEYS_PATH, keyFilterQuery, hasKeyFilters, type KeyFilterInput, type KeyFilterName, type KeyFilters } from '../../operator/key-filters.js'
import { shortKeyName, type AdminKey, type KeyOwner } from '../../operator/key-hygiene.js'
import type { OwnersLookup } from '../../operator/key-lookups.js'
import { noticeBlock, type OperatorNotice } from '../../operator/notice.js'
import { keyHint, keyStatus, lastUse, permissionsSummary, STATUS_LABELS } from '../keys.js'
import { page, type NavUser } from '../layout.js'
import { timeCell } from '../time.js'

export const revokePath = (id: string): string => `${KEYS_PATH}/${encodeURIComponent(id)}/revoke`

/** Why the filters show no keys: the console's own reading of them (naming the fields) or identity's refusal. */
export interface FiltersRefusal { messages: string[], fields: ReadonlySet<KeyFilterName> }

export interface AllKeysPageOptions {
  user: NavUser
  /** What the form sent, shown again as sent. */
  input: KeyFilterInput
  /** The filters the keys were listed with; null when none are shown. */
  filters: KeyFilters | null
  keys: AdminKey[] | null
  owners: OwnersLookup
  refusal: FiltersRefusal | null
  notice: OperatorNotice | null
  now: number
}

const ERROR_ID = 'filters-error'

/** A field's error wiring: it points at the alert that names it. */
function invalid (refusal: FiltersRefusal | null, name: KeyFilterName, describedBy: string[] = []): Html {
  const wrong = refusal?.fields.has(name) === true
  const ids = wrong ? [...describedBy, ERROR_ID] : describedBy
  return html`${ids.length === 0 ? '' : html` aria-describedby="${ids.join(' ')}"`}${wrong ? html` aria-invalid="true"` : ''}`
}

function ownerField (options: AllKeysPageOptions): Html {
  const { input, owners, refusal } = options
  const chosen = input.owner ?? ''
  if (!owners.known) {
    return html`<p><label for="owner">Owner's user id</label>
<input id="owner" name="owner" value="${chosen}" autocomplete="off" spellcheck="false"${invalid(refusal, 'owner', ['owner-hint'])}>
<span class="hint" id="owner-hint">Picking an owner by e-mail needs admin:users.</span></p>`
  }
  const users = [...owners.owners.values()].sort((a, b) => a.email.localeCompare(b.email))
  // An owner asked for by a link or by hand stays chosen even if the list no longer has them.
  const stranger = chosen !== '' && !owners.owners.has(chosen)
  return html`<p><label for="owner">Owner</label>
<select id="owner" name="owner"${invalid(refusal, 'owner')}>
<option value="">Any owner</option>
${users.map((owner) => html`<option value="${owner.id}"${owner.id === chosen ? ' selected' : ''}>${owner.email}${owner.status === 'disabled' ? ' (disabled)' : ''}</option>`)}
${stranger ? html`<option value="${chosen}" selected>${chosen}</option>` : ''}
</select></p>`
}

function filtersForm (options: AllKeysPageOptions): Html {
  const { input, refusal } = options
  const status = input.status ?? ''
  return html`<form method="get" action="${KEYS_PATH}" aria-label="Filter the keys">
<fieldset>
<legend>Filters</legend>
<div class="filter-grid">
${ownerField(options)}
<p><label for="status">Status</label>
<select id="status" name="status"${invalid(refusal, 'status')}>
<option value="">Any status</option>
${KEY_FILTER_STATUSES.map((name) => html`<option value="${name}"${name === status ? ' selected' : ''}>${STATUS_LABELS[name]}</option>`)}
</select></p>
<p><label for="expiring">Expiring within (days)</label>
<input type="number" id="expiring" name="expiring_within_days" min="1" step="1" inputmode="numeric" value="${input.expiring_within_days ?? ''}"${invalid(refusal, 'expiring_within_days')}></p>
<p><label for="idle">Idle for (days)</label>
<input type="number" id="idle" name="idle_days" min="1" step="1" inputmode="numeric" value="${input.idle_days ?? ''}"${invalid(refusal, 'idle_days')}></p>
<p class="choice"><input type="checkbox" id="never-expires" name="never_expires" value="true"${input.never_expires === 'true' ? ' checked' : ''}${invalid(refusal, 'never_expires')}>
<label for="never-expires">Never expires</label></p>
</div>
</fieldset>
<p class="actions"><button type="submit" id="apply-filters">Show keys</button> <a href="${KEYS_PATH}">Clear the filters</a></p>
</form>`
}

const ownerOf = (key: AdminKey, owners: OwnersLookup): KeyOwner | undefined =>
  owners.known && key.owner_user_id !== null ? owners.owners.get(key.owner_user_id) : undefined

function ownerCell (key: AdminKey, owners: OwnersLookup): Html {
  if (key.owner_user_id === null) return html`<span class="detail">no owner</span>`
  const owner = ownerOf(key, owners)
  if (owner === undefined) return html`<code>${key.owner_user_id}</code>${owners.known ? html`<span class="detail">not a known user</span>` : ''}`
  return html`${owner.email}${owner.status === 'disabled' ? html`<span class="detail">disabled: the key is refused</span>` : ''}`
}

function revokeForm (key: AdminKey, options: AllKeysPageOptions, filters: string): Html {
  if (key.status !== 'active') return html``
  // Two owners may name their keys alike: the button says whose it is.
  const owner = key.owner_user_id === null ? '' : ` of ${ownerOf(key, options.owners)?.email ?? key.owner_user_id}`
  return html`<form method="post" action="${revokePath(key.id)}">
<input type="hidden" name="_csrf" value="${options.user.csrf}">
<input type="hidden" name="filters" value="${filters}">
<button type="submit" class="danger" id="revoke-${key.id}" aria-label="Revoke the key ${shortKeyName(key)}${owner}">Revoke</button>
</form>`
}

function row (key: AdminKey, options: AllKeysPageOptions, filters: string): Html {
  const { now } = options
  const status = keyStatus(key, now)
  return html`<tr>
<th scope="row">${shortKeyName(key)}</th>
<td>${ownerCell(key, options.owners)}</td>
<td>${keyHint(key)}</td>
<td>${permissionsSummary(key.permissions)}</td>
<td>${timeCell(key.created_at, now)}</td>
<td>${timeCell(key.expires_at, now)}</td>
<td>${lastUse(key, now)}</td>
<td><span class="status status-${status}">${STATUS_LABELS[status]}</span></td>
<td>${revokeForm(key, options, filters)}</td>
</tr>`
}

function keysTable (keys: AdminKey[], filters: KeyFilters, options: AllKeysPageOptions): Html {
  const filtered = hasKeyFilters(filters)
  if (keys.length === 0) return html`<p id="no-keys">${filtered ? 'No key matches these filters.' : 'There are no API keys.'}</p>`
  const query = keyFilterQuery(filters)
  return html`<div class="table-wrap"><table id="all-keys">
<caption>${filtered ? 'API keys matching the filters' : 'Every API key'}: ${keys.length} (never a secret: identity keeps none it could show)</caption>
<thead><tr><th scope="col">Name</th><th scope="col">Owner</th><th scope="col">Prefix</th><th scope="col">Permissions</th><th scope="col">Created</th><th scope="col">Expires</th><th scope="col">Last used</th><th scope="col">Status</th><th scope="col">Action</th></tr></thead>
<tbody>
${keys.map((key) => row(key, options, query))}
</tbody>
</table></div>`
}

/**
 * All keys: every key of every user (and the ones with no owner), filtered as identity's
 * key hygiene queries filter them, each active one revocable. Filters that cannot be
 * read list nothing, so an unfiltered list is never taken for a filtered one.
 */
export function allKeysPage (options: AllKeysPageOptions): string {
  const { refusal, keys, filters } = options
  return page({
    title: 'All keys',
    user: options.user,
    body: html`<h1>All keys</h1>
${noticeBlock(options.notice)}
${refusal === null ? '' : html`<div class="alert" role="alert" id="${ERROR_ID}">${refusal.messages.map((message) => html`<p>${message}</p>`)}<p>No keys are shown until the filters are corrected.</p></div>`}
${filtersForm(options)}
${keys === null || filters === null ? '' : keysTable(keys, filters, options)}`
  })
}
