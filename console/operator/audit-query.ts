/**
 * The Audit page's filters: named as identity's GET /admin/audit query names them, read
 * from the page's own query string by that list only, and written again with
 * URLSearchParams, so nothing but a known filter ever reaches identity (no member of a
 * crafted URL, no `&` smuggled inside a value). Identity judges each value; the page
 * shows its refusal.
 */

/** The filters the page and its export pass on, in the form's order. */
export const AUDIT_FILTER_NAMES = ['action', 'outcome', 'actor_type', 'actor_id', 'target_type', 'target_id', 'from', 'to', 'order'] as const
export type AuditFilterName = typeof AUDIT_FILTER_NAMES[number]
export type AuditFilters = Partial<Record<AuditFilterName, string>>

/** What one page of the listing shows: the filters, and the page's size and place (which the export does not take). */
export interface AuditView {
  filters: AuditFilters
  limit: string
  cursor: string | undefined
}

/** Fewer than identity's default: a page of the trail stays readable. */
export const DEFAULT_LIMIT = '50'

/** A member given once and not blank; a repeated one (an array) is not the page's own form and is left out. */
function textOf (query: Record<string, unknown>, name: string): string | undefined {
  const value = query[name]
  if (typeof value !== 'string') return undefined
  const trimmed = value.trim()
  return trimmed === '' ? undefined : trimmed
}

/** The page's query string, reduced to the members it knows. */
export function auditViewOf (query: unknown): AuditView {
  const members = typeof query === 'object' && query !== null ? query as Record<string, unknown> : {}
  const filters: AuditFilters = {}
  for (const name of AUDIT_FILTER_NAMES) {
    const value = textOf(members, name)
    if (value !== undefined) filters[name] = value
  }
  return { filters, limit: textOf(members, 'limit') ?? DEFAULT_LIMIT, cursor: textOf(members, 'cursor') }
}

/** What a `datetime-local` field sends (seconds optional), or a date alone. */
const LOCAL_DATE_TIME = /^(\d{4}-\d{2}-\d{2})(?:T(\d{2}:\d{2})(:\d{2}(?:\.\d+)?)?)?$/

/**
 * A `from` or `to` as identity takes it (RFC 3339): the form's zoneless date and time
 * read as UTC, as the field's label says; anything else as given, for identity to judge.
 */
export function instantOf (value: string): string {
  const match = LOCAL_DATE_TIME.exec(value)
  if (match === null) return value
  const [, date, time = '00:00', seconds = ':00'] = match
  return `${date as string}T${time}${seconds}Z`
}

/** The value a `datetime-local` field can show: the form's own, or a full instant in UTC; '' for what it cannot hold. */
export function localInputValue (value: string | undefined): string {
  if (value === undefined) return ''
  if (LOCAL_DATE_TIME.exec(value)?.[2] !== undefined) return value
  const at = Date.parse(value)
  return Number.isNaN(at) ? '' : new Date(at).toISOString().slice(0, 19)
}

function searchOf (filters: AuditFilters, extra: Record<string, string | undefined>, convert: (name: AuditFilterName, value: string) => string): string {
  const params = new URLSearchParams()
  for (const name of AUDIT_FILTER_NAMES) {
    const value = filters[name]
    if (value !== undefined) params.set(name, convert(name, value))
  }
  for (const [name, value] of Object.entries(extra)) if (value !== undefined) params.set(name, value)
  return params.toString()
}

/** Identity's query for these filters, with `extra` (limit and cursor, or format). */
export function identityQuery (filters: AuditFilters, extra: Record<string, string | undefined>): string {
  return searchOf(filters, extra, (name, value) => name === 'from' || name === 'to' ? instantOf(value) : value)
}

/** The console's own query for these filters (as the form sent them), for its links. */
export function consoleQuery (filters: AuditFilters, extra: Record<string, string | undefined> = {}): string {
  return searchOf(filters, extra, (_name, value) => value)
}

/** The page's members a refusal from identity names (`querystring/from must …`), so the page can point at its fields. */
export function refusedMembers (detail: string): string[] {
  const named = new Set([...detail.matchAll(/querystring\/(\w+)/g)].map((match) => match[1]))
  return [...AUDIT_FILTER_NAMES, 'limit', 'cursor'].filter((name) => named.has(name))
}
