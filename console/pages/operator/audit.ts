import { html, type Html } from '../../html.js'
import type { Problem } from '../../http-json.js'
import { consoleQuery, localInputValue, refusedMembers, type AuditFilterName, type AuditFilters, type AuditView } from '../../operator/audit-query.js'
import { alert, BASE, page, type NavUser } from '../layout.js'
import { timeCell } from '../time.js'
import { changesSummary, type AuditChanges } from './audit-changes.js'

/** A record as identity's GET /admin/audit shows it (the members the page reads). */
export interface AuditRecord {
  seq: number
  at: string
  action: string
  outcome: 'success' | 'failure'
  error_code: string | null
  actor: { type: string, id: string | null }
  source: { ip: string | null }
  target: { type: string, id: string | null, name: string | null } | null
  changes: AuditChanges
}

export interface AuditListing { records: AuditRecord[], next_cursor: string | null }

/** GET /admin/audit/verify: the chain checked from its anchor to its last record. */
export interface ChainVerification { valid: boolean, checked: number, first_broken_seq: number | null }

/** The verification's answer, or identity's reason for not giving one. */
export type VerificationResult = { ok: true, body: ChainVerification } | { ok: false, detail: string }

export const AUDIT_PATH = `${BASE}/operator/audit`
export const AUDIT_EXPORT_PATH = `${AUDIT_PATH}/export`

const ACTOR_LABELS: Record<string, string> = { user: 'User', admin_token: 'Admin token', cli: 'CLI', system: 'System', anonymous: 'Anonymous' }
const OUTCOME_LABELS: Record<string, string> = { success: 'Success', failure: 'Failure' }
const ORDER_LABELS: Record<string, string> = { newest: 'Newest first', oldest: 'Oldest first' }

/** The form's labels, which a refusal also names its fields by. */
const FIELD_LABELS: Record<AuditFilterName | 'limit' | 'cursor', string> = {
  action: 'Action',
  outcome: 'Outcome',
  actor_type: 'Actor type',
  actor_id: 'Actor ID',
  target_type: 'Target type',
  target_id: 'Target ID',
  from: 'From (UTC)',
  to: 'Before (UTC)',
  order: 'Order',
  limit: 'Records per page',
  cursor: 'Page link'
}

/** Fields a refusal named: marked invalid on the form. */
type Invalid = ReadonlySet<string>

const records = (count: number): string => count === 1 ? '1 record' : `${count} records`
const withQuery = (path: string, query: string): string => query === '' ? path : `${path}?${query}`

/** The chain's state, first on the page: intact (a status), broken or unverifiable (an alert, never "intact"). */
function trailCheck (result: VerificationResult): Html {
  if (!result.ok) {
    return html`<div class="alert" role="alert" id="trail-check"><p>The audit trail could not be verified: ${result.detail}</p></div>`
  }
  const { valid, checked, first_broken_seq: broken } = result.body
  if (valid) return html`<div class="notice trail-intact" role="status" id="trail-check"><p>The audit trail is intact: ${records(checked)} checked.</p></div>`
  return html`<div class="alert" role="alert" id="trail-check"><p>The audit trail is broken at record #${broken ?? checked + 1}: it was changed, removed or
reordered outside identity, so it and the records after it cannot be trusted.${checked === 0 ? '' : ` The ${records(checked)} before it verify.`}</p></div>`
}

const invalidMark = (name: string, invalid: Invalid): Html => invalid.has(name) ? html` aria-invalid="true"` : html``

/** A select whose first option is "Any" (no filter); a value not among the options selects nothing, as identity will say. */
function choice (name: AuditFilterName, labels: Record<string, string>, chosen: string | undefined, any: string | null, invalid: Invalid): Html {
  return html`<p><label for="filter-${name}">${FIELD_LABELS[name]}</label>
<select id="filter-${name}" name="${name}"${invalidMark(name, invalid)}>
${any === null ? '' : html`<option value="">${any}</option>`}
${Object.entries(labels).map(([value, text]) => html`<option value="${value}"${value === chosen ? html` selected` : ''}>${text}</option>`)}
</select></p>`
}

function textField (name: AuditFilterName, value: string | undefined, hint: string, invalid: Invalid): Html {
  return html`<p><label for="filter-${name}">${FIELD_LABELS[name]}</label>
<input id="filter-${name}" name="${name}" value="${value ?? ''}" autocomplete="off" spellcheck="false" aria-describedby="filter-${name}-hint"${invalidMark(name, invalid)}>
<span class="hint" id="filter-${name}-hint">${hint}</span></p>`
}

function timeField (name: 'from' | 'to', value: string | undefined, hint: string, invalid: Invalid): Html {
  return html`<p><label for="filter-${name}">${FIELD_LABELS[name]}</label>
<input type="datetime-local" step="1" id="filter-${name}" name="${name}" value="${localInputValue(value)}" aria-describedby="filter-${name}-hint"${invalidMark(name, invalid)}>
<span class="hint" id="filter-${name}-hint">${hint}</span></p>`
}

function filterForm (view: AuditView, invalid: Invalid): Html {
  const f = view.filters
  return html`<form method="get" action="${AUDIT_PATH}" class="audit-filters" aria-label="Filter the audit records">
<fieldset>
<legend>Filters</legend>
<div class="filter-grid">
${textField('action', f.action, 'e.g. key.create, user.disable, login', invalid)}
${choice('outcome', OUTCOME_LABELS, f.outcome, 'Any', invalid)}
${choice('actor_type', ACTOR_LABELS, f.actor_type, 'Any', invalid)}
${textField('actor_id', f.actor_id, 'a user\'s ID, or the CLI\'s name', invalid)}
${textField('target_type', f.target_type, 'e.g. key, user, role', invalid)}
${textField('target_id', f.target_id, 'the changed thing\'s ID or name', invalid)}
${timeField('from', f.from, 'records at or after this time', invalid)}
${timeField('to', f.to, 'records before this time', invalid)}
${choice('order', ORDER_LABELS, f.order, null, invalid)}
<p><label for="filter-limit">${FIELD_LABELS.limit}</label>
<input type="number" id="filter-limit" name="limit" min="1" max="500" value="${view.limit}"${invalidMark('limit', invalid)}></p>
</div>
</fieldset>
<p class="actions"><button type="submit" id="apply-filters">Show records</button> <a href="${AUDIT_PATH}">Clear the filters</a></p>
</form>`
}

function actorCell (actor: AuditRecord['actor']): Html {
  return html`${ACTOR_LABELS[actor.type] ?? actor.type}${actor.id === null ? '' : html`<span class="detail">${actor.id}</span>`}`
}

function outcomeCell (record: AuditRecord): Html {
  return html`<span class="outcome-${record.outcome === 'failure' ? 'failure' : 'success'}">${OUTCOME_LABELS[record.outcome] ?? record.outcome}</span>${record.error_code === null ? '' : html`<span class="detail">${record.error_code}</span>`}`
}

function targetCell (target: AuditRecord['target']): Html {
  if (target === null) return html`<span aria-hidden="true">—</span><span class="visually-hidden">none</span>`
  const named = target.name !== null && target.name !== target.id
  return html`${target.type}${named ? html`<span class="detail">${target.name}</span>` : ''}${target.id === null ? '' : html`<span class="detail"><code>${target.id}</code></span>`}`
}

function changesCell (changes: AuditChanges): Html {
  const lines = changesSummary(changes)
  if (lines.length === 0) return html`<span aria-hidden="true">—</span><span class="visually-hidden">no changes</span>`
  return html`<ul class="changes">${lines.map((line) => html`<li>${line}</li>`)}</ul>`
}

function row (record: AuditRecord, now: number): Html {
  return html`<tr>
<th scope="row">${record.seq}</th>
<td>${timeCell(record.at, now)}</td>
<td>${actorCell(record.actor)}</td>
<td><code>${record.action}</code></td>
<td>${outcomeCell(record)}</td>
<td>${targetCell(record.target)}</td>
<td>${record.source.ip ?? '—'}</td>
<td>${changesCell(record.changes)}</td>
</tr>`
}

function table (listing: AuditListing, view: AuditView, now: number): Html {
  const oldestFirst = view.filters.order === 'oldest'
  if (listing.records.length === 0) return html`<p id="no-records">No record matches these filters${view.cursor === undefined ? '' : ' past this page'}.</p>`
  const next = listing.next_cursor === null
    ? ''
    : html`<a href="${withQuery(AUDIT_PATH, consoleQuery(view.filters, { limit: view.limit, cursor: listing.next_cursor }))}" rel="next" id="next-page">${oldestFirst ? 'Newer records' : 'Older records'}</a>`
  const first = view.cursor === undefined
    ? ''
    : html`<a href="${withQuery(AUDIT_PATH, consoleQuery(view.filters, { limit: view.limit }))}" id="first-page">${oldestFirst ? 'Back to the oldest' : 'Back to the newest'}</a>`
  return html`<div class="table-wrap"><table id="audit-records">
<caption>Audit records, ${oldestFirst ? 'oldest' : 'newest'} first</caption>
<thead><tr><th scope="col">Seq</th><th scope="col">Time</th><th scope="col">Actor</th><th scope="col">Action</th><th scope="col">Outcome</th><th scope="col">Target</th><th scope="col">Source IP</th><th scope="col">Changes</th></tr></thead>
<tbody>
${listing.records.map((record) => row(record, now))}
</tbody>
</table></div>
${next === '' && first === '' ? '' : html`<nav class="pager" aria-label="Audit pages">${first} ${next}</nav>`}`
}

function exportLink (filters: AuditFilters): Html {
  return html`<p class="export"><a href="${withQuery(AUDIT_EXPORT_PATH, consoleQuery(filters))}" id="export">Export as NDJSON</a>
<span class="hint">every record matching these filters, one JSON object a line</span></p>`
}

/** Why identity gave no listing or export: a bad filter is named by its field's label, with identity's own words. */
export function refusalText (problem: Problem): string {
  if (problem.status !== 400) return problem.detail
  const fields = refusedMembers(problem.detail).map((name) => FIELD_LABELS[name as keyof typeof FIELD_LABELS])
  const which = fields.length === 0 ? 'these filters' : `${fields.length === 1 ? 'the filter' : 'the filters'} ${fields.join(', ')}`
  return `Identity refused ${which}: ${problem.detail}`
}

/**
 * The Audit page: the chain's verification, the filters (a GET form, so a filtered view
 * is a link), a page of records with the next page's link, and the export of every
 * matching record. `refusal` is why there is no listing (a filter identity refused).
 */
export function auditPage (options: { user: NavUser, now: number, view: AuditView, verification: VerificationResult, listing: AuditListing | null, refusal: Problem | null }): string {
  const { user, now, view, listing, refusal } = options
  const invalid: Invalid = new Set(refusal?.status === 400 ? refusedMembers(refusal.detail) : [])
  return page({
    title: 'Audit trail',
    user,
    body: html`<h1>Audit trail</h1>
${trailCheck(options.verification)}
${filterForm(view, invalid)}
${refusal === null ? '' : alert(refusalText(refusal))}
${listing === null
  ? ''
  : html`${exportLink(view.filters)}
${table(listing, view, now)}`}`
  })
}

/** An export identity refused: said on a page of its own, never as a file that stops halfway. */
export function auditExportRefusedPage (user: NavUser, filters: AuditFilters, refusal: Problem): string {
  return page({
    title: 'Export refused',
    user,
    body: html`<h1>Export refused</h1>
${alert(`The audit records could not be exported. ${refusalText(refusal)}`)}
<p><a href="${withQuery(AUDIT_PATH, consoleQuery(filters))}">Back to the audit trail</a></p>`
  })
}
