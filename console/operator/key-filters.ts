import { BASE } from '../pages/layout.js'

/**
 * The All keys page's filters, named as identity's GET /admin/keys query names them
 * (owner, status, expiring_within_days, idle_days, never_expires). They are read from
 * the page's query string (or the hidden field a revoke form carries it in) by that
 * list only and written again with URLSearchParams, so nothing but a known filter ever
 * reaches identity. A value the console can tell is wrong is refused here, in words the
 * form's user reads; identity judges the rest (its 400 detail is shown as it is).
 */

export const KEYS_PATH = `${BASE}/operator/keys`

/** The key states identity filters by; "rotating" is an old secret still in its grace period. */
export const KEY_FILTER_STATUSES = ['active', 'disabled', 'revoked', 'expired', 'rotating'] as const
export type KeyFilterStatus = typeof KEY_FILTER_STATUSES[number]

export const KEY_FILTER_NAMES = ['owner', 'status', 'expiring_within_days', 'idle_days', 'never_expires'] as const
export type KeyFilterName = typeof KEY_FILTER_NAMES[number]

export interface KeyFilters {
  owner?: string
  status?: KeyFilterStatus
  expiring_within_days?: number
  idle_days?: number
  never_expires?: true
}

/** What the form sent, as it sent it: the form shows it again, right or wrong. */
export type KeyFilterInput = Partial<Record<KeyFilterName, string>>

export interface KeyFilterError { name: KeyFilterName | null, message: string }

export type ParsedKeyFilters =
  | { ok: true, filters: KeyFilters, input: KeyFilterInput }
  | { ok: false, errors: KeyFilterError[], input: KeyFilterInput }

/** A user id as identity writes them (its `Id`): nothing else can be an owner. */
const USER_ID = /^[A-Za-z0-9_]{1,64}$/
/** A whole number of days; identity decides how many it takes. */
const DAYS = /^\d{1,9}$/

const isFilterName = (name: string): name is KeyFilterName => (KEY_FILTER_NAMES as readonly string[]).includes(name)
const isStatus = (value: string): value is KeyFilterStatus => (KEY_FILTER_STATUSES as readonly string[]).includes(value)

function daysOf (value: string, name: KeyFilterName, what: string, errors: KeyFilterError[]): number | undefined {
  const days = DAYS.test(value) ? Number(value) : 0
  if (days >= 1) return days
  errors.push({ name, message: `${what}: "${value}" is not a number of days; write a whole number such as 7 or 90.` })
  return undefined
}

/** The filters of a query string; an empty field is no filter (a GET form sends every field). */
export function parseKeyFilters (params: URLSearchParams): ParsedKeyFilters {
  const input: KeyFilterInput = {}
  const errors: KeyFilterError[] = []
  const seen = new Set<string>()
  for (const [name, raw] of params) {
    if (!isFilterName(name)) {
      errors.push({ name: null, message: `"${name}" is not a filter of this page; it filters by owner, status, expiry and idleness.` })
      continue
    }
    if (seen.has(name)) {
      errors.push({ name, message: `The filter ${name} is given twice; give it once.` })
      continue
    }
    seen.add(name)
    input[name] = raw.trim()
  }
  const filters: KeyFilters = {}
  const { owner, status, expiring_within_days: expiring, idle_days: idle, never_expires: neverExpires } = input
  if (owner !== undefined && owner !== '') {
    if (USER_ID.test(owner)) filters.owner = owner
    else errors.push({ name: 'owner', message: `Owner: "${owner}" is not a user id; user ids are letters, digits and _ (usr_…).` })
  }
  if (status !== undefined && status !== '') {
    if (isStatus(status)) filters.status = status
    else errors.push({ name: 'status', message: `Status: "${status}" is not one of ${KEY_FILTER_STATUSES.join(', ')}.` })
  }
  if (expiring !== undefined && expiring !== '') {
    const days = daysOf(expiring, 'expiring_within_days', 'Expiring within', errors)
    if (days !== undefined) filters.expiring_within_days = days
  }
  if (idle !== undefined && idle !== '') {
    const days = daysOf(idle, 'idle_days', 'Idle for', errors)
    if (days !== undefined) filters.idle_days = days
  }
  if (neverExpires !== undefined && neverExpires !== '') {
    if (neverExpires === 'true') filters.never_expires = true
    else errors.push({ name: 'never_expires', message: `Never expires: "${neverExpires}" is not a choice; tick the box or leave it out.` })
  }
  return errors.length === 0 ? { ok: true, filters, input } : { ok: false, errors, input }
}

/** The filters as a query string (no `?`), in one order: identity's query and the page's own links alike. */
export function keyFilterQuery (filters: KeyFilters): string {
  const params = new URLSearchParams()
  for (const name of KEY_FILTER_NAMES) {
    const value = filters[name]
    if (value !== undefined) params.set(name, String(value))
  }
  return params.toString()
}

export function hasKeyFilters (filters: KeyFilters): boolean {
  return keyFilterQuery(filters) !== ''
}

/** The All keys page showing the keys `filters` match. */
export function keysPathOf (filters: KeyFilters): string {
  const query = keyFilterQuery(filters)
  return query === '' ? KEYS_PATH : `${KEYS_PATH}?${query}`
}
