import { html, type Html } from '../../html.js'
import { keysPathOf, type KeyFilters } from '../../operator/key-filters.js'
import { shortKeyName, type AdminKey, type Owners } from '../../operator/key-hygiene.js'
import { NEEDS_USERS } from '../../operator/key-lookups.js'
import { page, type NavUser } from '../layout.js'

/** How long unused makes a key idle on the Overview: a quarter, the usual review cycle. */
export const IDLE_DAYS = 90

/** The active keys that never expire, and those idle for IDLE_DAYS: the links open exactly these. */
export const NEVER_EXPIRING: KeyFilters = { status: 'active', never_expires: true }
export const IDLE: KeyFilters = { status: 'active', idle_days: IDLE_DAYS }

/** One figure, or why the page cannot give it (identity's refusal, or a permission the operator lacks). */
export type Figure<T> = { ok: true, value: T } | { ok: false, reason: string }

export interface OverviewFigures {
  neverExpiring: Figure<number>
  idle: Figure<number>
  overPrivileged: Figure<{ keys: AdminKey[], owners: Owners }>
  disabledOwners: Figure<{ held: number, usable: number }>
}

/** The over-privileged keys named in the card: enough to act on, not a second table. */
const LISTED_KEYS = 10

const keys = (count: number): string => count === 1 ? '1 key' : `${count} keys`

/** A card's number and what it says of it. */
interface Shown { count: number, body: Html }

function shown<T> (figure: Figure<T>, show: (value: T) => Shown): Figure<Shown> {
  return figure.ok ? { ok: true, value: show(figure.value) } : figure
}

function card (id: string, title: string, figure: Figure<Shown>): Html {
  return html`<article class="card" aria-labelledby="${id}-title">
<h2 id="${id}-title">${title}</h2>
${figure.ok
  ? html`<p class="figure" id="${id}-count">${figure.value.count}</p>${figure.value.body}`
  : html`<p class="figure-missing" id="${id}-count">${figure.reason}</p>${figure.reason === NEEDS_USERS ? html`<p>This card judges keys by their owners' permissions and status, which only the users list gives.</p>` : ''}`}
</article>`
}

function overPrivilegedList (value: { keys: AdminKey[], owners: Owners }): Html {
  const listed = value.keys.slice(0, LISTED_KEYS)
  return html`<p>Active keys allowed everything their owner may do: whoever holds one holds the owner's whole access. Narrow them to what they are used for.</p>
${listed.length === 0
  ? ''
  : html`<ul class="card-list">
${listed.map((key) => {
  const owner = value.owners.get(key.owner_user_id ?? '')
  return html`<li><a href="${keysPathOf({ owner: key.owner_user_id ?? '', status: 'active' })}">${shortKeyName(key)}</a> <span class="detail">of ${owner?.email ?? key.owner_user_id}</span></li>`
})}
</ul>${value.keys.length > listed.length ? html`<p class="detail">and ${value.keys.length - listed.length} more</p>` : ''}`}`
}

/**
 * Overview: four numbers on the keys' hygiene, each from identity's answers now, with a
 * link to All keys showing those keys where a filter does.
 */
export function overviewPage (options: { user: NavUser, figures: OverviewFigures }): string {
  const { neverExpiring, idle, overPrivileged, disabledOwners } = options.figures
  return page({
    title: 'Overview',
    user: options.user,
    body: html`<h1>Overview</h1>
<p>The API keys' hygiene, as identity reports it now.</p>
<div class="cards">
${card('never-expiring', 'Keys that never expire', shown(neverExpiring, (count) => ({
  count,
  body: html`<p>Active keys without an expiry: they work until someone revokes them.</p>
<p><a href="${keysPathOf(NEVER_EXPIRING)}">Show the ${keys(count)} that never expire</a></p>`
})))}
${card('idle', `Keys idle for ${IDLE_DAYS} days`, shown(idle, (count) => ({
  count,
  body: html`<p>Active keys not used for ${IDLE_DAYS} days (or, never used, made that long ago): likely forgotten, still working.</p>
<p><a href="${keysPathOf(IDLE)}">Show the ${keys(count)} idle for ${IDLE_DAYS} days</a></p>`
})))}
${card('over-privileged', 'Over-privileged keys', shown(overPrivileged, (value) => ({ count: value.keys.length, body: overPrivilegedList(value) })))}
${card('disabled-owners', 'Keys of disabled owners', shown(disabledOwners, ({ held, usable }) => ({
  count: usable,
  body: html`<p>${usable === 1 ? 'key' : 'keys'} of disabled owners can be used: identity refuses a disabled owner's keys at use, as it refuses a disabled key.</p>
<p id="disabled-owners-held">${keys(held)} held by disabled owners ${held === 1 ? 'is' : 'are'} refused.</p>`
})))}
</div>`
  })
}
