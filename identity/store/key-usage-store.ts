import type { OutcomeCounts } from '../../common/internal-api.js'
import type { Db } from './db.js'

/** The outcomes of one secret's requests in one hour, as a gateway reported them. */
export interface SecretHour extends OutcomeCounts {
  lookupId: string
  /** ms since the epoch, a whole UTC hour. */
  hourStart: number
}

/** The outcomes of one key's requests (all its secrets) in one hour. */
export interface KeyHour extends OutcomeCounts {
  hourStart: number
}

interface HourRow {
  hour_start: number
  allowed: number
  forbidden: number
  rate_limited: number
  quota_exhausted: number
  upstream_error: number
}

/** Counts stop at the largest integer a JSON number carries exactly, as quota counts do. */
const MAX_COUNT = Number.MAX_SAFE_INTEGER
const adding = (column: string): string => `${column} = min(${column} + excluded.${column}, ${MAX_COUNT})`

export type KeyUsageStore = ReturnType<typeof createKeyUsageStore>

/** Hourly outcome counts per key (table key_usage_hourly), kept for the usage-over-time views. */
export function createKeyUsageStore (db: Db) {
  const statements = {
    // The secret's key, by its lookup id: nothing is inserted for a lookup id no secret has.
    add: db.prepare(`INSERT INTO key_usage_hourly (key_id, hour_start, allowed, forbidden, rate_limited, quota_exhausted, upstream_error)
      SELECT key_id, @hourStart, @allowed, @forbidden, @rate_limited, @quota_exhausted, @upstream_error
        FROM api_key_secrets WHERE lookup_id = @lookupId
      ON CONFLICT (key_id, hour_start) DO UPDATE SET
        ${['allowed', 'forbidden', 'rate_limited', 'quota_exhausted', 'upstream_error'].map(adding).join(', ')}`),
    hoursOf: db.prepare(`SELECT hour_start, allowed, forbidden, rate_limited, quota_exhausted, upstream_error FROM key_usage_hourly
      WHERE key_id = ? AND hour_start >= ? AND hour_start < ? ORDER BY hour_start`),
    forgetBefore: db.prepare('DELETE FROM key_usage_hourly WHERE hour_start < ?')
  }

  return {
    /** Inside the caller's transaction: adds each hour to its key's bucket; lookup ids no secret has are skipped. */
    add (hours: readonly SecretHour[]): void {
      for (const hour of hours) statements.add.run(hour)
    },

    /** The key's hours in [from, to), oldest first; hours nothing was counted in are absent. */
    hoursOf (keyId: string, from: number, to: number): KeyHour[] {
      return (statements.hoursOf.all(keyId, from, to) as HourRow[]).map((row) => ({
        hourStart: row.hour_start,
        allowed: row.allowed,
        forbidden: row.forbidden,
        rate_limited: row.rate_limited,
        quota_exhausted: row.quota_exhausted,
        upstream_error: row.upstream_error
      }))
    },

    /** Forgets every hour that started before `cutoff`; how many key-hours went. */
    forgetBefore: (cutoff: number): number => statements.forgetBefore.run(cutoff).changes
  }
}
