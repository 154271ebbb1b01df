import type { Db } from './db.js'

/**
 * How long an applied report's id is remembered. A gateway sends a report again until
 * it hears identity's answer, backing off to a minute between tries: a day covers any
 * outage after which anyone would still trust the counts.
 */
export const USAGE_BATCH_MEMORY_MS = 86_400_000

/** The tables of applied report ids: one per kind of report (migrations 3 and 4). */
export type BatchTable = 'key_usage_batches' | 'quota_usage_batches'

export type BatchLedger = ReturnType<typeof createBatchLedger>

/**
 * The reports a gateway sent that were applied, by the id it chose: a report sent
 * again after a lost answer keeps its id and must not count twice.
 */
export function createBatchLedger (db: Db, table: BatchTable) {
  const statements = {
    applied: db.prepare(`SELECT 1 FROM ${table} WHERE id = ?`),
    forgetBefore: db.prepare(`DELETE FROM ${table} WHERE applied_at < ?`),
    remember: db.prepare(`INSERT INTO ${table} (id, applied_at) VALUES (?, ?)`)
  }
  return {
    /**
     * Inside the caller's transaction: true, and the id remembered, the first time an
     * id is seen; false when it was applied before. Ids older than the memory are
     * forgotten on the way, so the table stays a day of reports long.
     */
    claim (batchId: string, now: number): boolean {
      if (statements.applied.get(batchId) !== undefined) return false
      statements.forgetBefore.run(now - USAGE_BATCH_MEMORY_MS)
      statements.remember.run(batchId, now)
      return true
    }
  }
}
