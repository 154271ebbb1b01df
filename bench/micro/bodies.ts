import { DEFAULT_SEED } from '../../upstream-mock/config.js'
import { pageMeta } from '../../upstream-mock/resource-routes.js'
import { seedUser } from '../../upstream-mock/seed.js'

/**
 * The JSON bodies the inflection micro-benchmarks rewrite, as an upstream sends them
 * (snake_case keys), the same bytes on every run:
 *   - narrow: upstream-mock's users page, a dozen keys per user, nested address,
 *     preferences and phone numbers, short values;
 *   - 40-key records: flat records of 40 snake_case keys, the wide rows of a back-office
 *     export, where names are a larger share of the bytes.
 */

export interface MicroShape {
  /** What reports show. */
  label: string
  /** The page of this shape whose length is closest to `targetBytes` (at least one record). */
  build: (targetBytes: number) => Buffer
}

/**
 * A page of `recordAt(1)`, `recordAt(2)`, … wrapped by `wrap` (which is told the count,
 * for its meta), with the number of records whose JSON is closest to `targetBytes`.
 */
function pageNear<R> (targetBytes: number, recordAt: (id: number) => R, wrap: (records: R[], count: number) => unknown): Buffer {
  const records: R[] = []
  let recordsBytes = 0 // the records' JSON, commas included
  const distance = (count: number, bytes: number): number => Math.abs(Buffer.byteLength(JSON.stringify(wrap([], count))) + bytes - targetBytes)
  for (let id = 1; ; id++) {
    const record = recordAt(id)
    const bytes = recordsBytes + Buffer.byteLength(JSON.stringify(record)) + (records.length > 0 ? 1 : 0)
    if (records.length > 0 && distance(records.length + 1, bytes) >= distance(records.length, recordsBytes)) break
    records.push(record)
    recordsBytes = bytes
  }
  return Buffer.from(JSON.stringify(wrap(records, records.length)), 'utf8')
}

function pageOf<R> (member: string) {
  return (records: R[], count: number): Record<string, unknown> => ({ [member]: records, meta: pageMeta(1, count, count) })
}

/**
 * A users page as upstream-mock answers `GET /users` (snake_case keys, nested address,
 * preferences and phone numbers), with the number of users whose JSON is closest to
 * `targetBytes` (at least one).
 */
export function buildUsersPage (targetBytes: number): Buffer {
  return pageNear(targetBytes, (id) => seedUser(DEFAULT_SEED, id), pageOf('users'))
}

/** The 40 member names of a wide record, snake_case, some with digit words (`street_line_1`). */
export const RECORD_KEYS: readonly string[] = Object.freeze([
  'record_id', 'account_id', 'external_ref', 'display_name', 'first_name', 'last_name', 'email_address', 'phone_number',
  'street_line_1', 'street_line_2', 'city_name', 'postal_code', 'country_code', 'time_zone', 'preferred_locale', 'currency_code',
  'created_at', 'updated_at', 'last_login_at', 'deleted_at', 'is_active', 'is_verified', 'has_two_factor', 'marketing_opt_in',
  'login_count', 'failed_login_count', 'order_count', 'total_spent_cents', 'average_order_cents', 'loyalty_points',
  'credit_limit', 'risk_score', 'referral_code', 'referred_by_id', 'plan_name', 'billing_cycle', 'next_invoice_at',
  'trial_ends_at', 'api_version', 'notes_text'
])

const CITIES = ['Lisbon', 'Porto', 'Lyon', 'Leipzig', 'Utrecht', 'Gdańsk', 'Zürich', 'Bergen']
const PLANS = ['free', 'team', 'business', 'enterprise']

/** Record `id`'s values: ints, strings (a few non-ASCII), ISO dates, booleans, nulls, fractions. */
export function wideRecord (id: number): Record<string, unknown> {
  const day = (offset: number): string => new Date(Date.UTC(2025, 0, 1) + ((id * 7919 + offset) % 400) * 86_400_000).toISOString()
  const values: unknown[] = [
    id, 100_000 + (id % 977), `ext-${(id * 2_654_435_761 % 4_294_967_296).toString(16)}`, `Customer ${id}`, 'Ada', 'Lovelace',
    `customer.${id}@example.com`, `+351 21 ${String(1_000_000 + id * 37 % 9_000_000)}`,
    `${id % 240 + 1} Rua das Flores`, id % 3 === 0 ? `Apartment ${id % 60}` : null, CITIES[id % CITIES.length], `${1000 + id % 8999}-${100 + id % 899}`,
    'PT', 'Europe/Lisbon', 'pt-PT', 'EUR',
    day(0), day(30), id % 8 === 0 ? null : day(60), id % 50 === 0 ? day(90) : null, id % 13 !== 0, id % 4 !== 0, id % 5 === 0, id % 2 === 0,
    id * 31 % 5000, id % 7, id * 13 % 400, id * 104_729 % 10_000_000, id * 7_919 % 40_000, id * 17 % 12_000,
    (id % 20) * 500, Math.round((id * 0.618_033_988_75 % 1) * 1000) / 1000, `REF${(id * 48_271 % 1_000_000).toString(36).toUpperCase()}`,
    id % 9 === 0 ? null : Math.max(1, id - 17), PLANS[id % PLANS.length], id % 3 === 0 ? 'yearly' : 'monthly', day(120),
    id % 6 === 0 ? day(14) : null, '2024-10-01', id % 11 === 0 ? 'Prefers e-mail; called twice about "invoice" layout.' : ''
  ]
  const record: Record<string, unknown> = {}
  RECORD_KEYS.forEach((key, index) => { record[key] = values[index] })
  return record
}

/** A page of wide records (`{"records": [...], "meta": {...}}`) closest to `targetBytes`. */
export function buildRecordsPage (targetBytes: number): Buffer {
  return pageNear(targetBytes, wideRecord, pageOf('records'))
}

export const MICRO_SHAPES: readonly MicroShape[] = Object.freeze([
  { label: 'narrow', build: buildUsersPage },
  { label: '40-key records', build: buildRecordsPage }
])
