import type { Db } from './db.js'
import { createBatchLedger } from './usage-batches.js'

/** One quota counter in one period: the gateway's name for it and the period's start (0: never refills). */
export interface QuotaCounterKey {
  counter: string
  periodStart: number
}

export interface QuotaCount extends QuotaCounterKey { used: number }

/**
 * Counts are capped at the largest integer a JSON number carries exactly: a quota's
 * limit is at most that, so a count at the cap refuses as surely as a larger one.
 */
const MAX_COUNT = Number.MAX_SAFE_INTEGER

export type QuotaStore = ReturnType<typeof createQuotaStore>

/** Identity's authoritative quota counts, per counter and period, as the gateways report uses. */
export function createQuotaStore (db: Db) {
  const statements = {
    add: db.prepare(`INSERT INTO quota_usage (counter, period_start, used, updated_at) VALUES (@counter, @periodStart, min(@count, ${MAX_COUNT}), @now)
      ON CONFLICT (counter, period_start) DO UPDATE SET used = min(used + excluded.used, ${MAX_COUNT}), updated_at = excluded.updated_at`),
    used: db.prepare('SELECT used FROM quota_usage WHERE counter = ? AND period_start = ?').pluck(),
    forgetEndedBefore: db.prepare('DELETE FROM quota_usage WHERE period_start > 0 AND updated_at < ?')
  }
  const batches = createBatchLedger(db, 'quota_usage_batches')

  function totals (keys: readonly QuotaCounterKey[]): QuotaCount[] {
    const seen = new Set<string>()
    const counts: QuotaCount[] = []
    for (const { counter, periodStart } of keys) {
      const id = JSON.stringify([counter, periodStart])
      if (seen.has(id)) continue
      seen.add(id)
      counts.push({ counter, periodStart, used: (statements.used.get(counter, periodStart) as number | undefined) ?? 0 })
    }
    return counts
  }

  return {
    /**
     * Adds a gateway's report in one transaction, once per batch id, and answers the
     * totals of every counter it names (uses first, then reads, each once). Counts not
     * updated since `forgetEndedBefore` belong to periods that are over and are dropped
     * (never those of quotas that never refill). IMMEDIATE: the write lock is taken
     * before the first read, so a concurrent writer makes this wait, not fail.
     */
    record (batchId: string, uses: ReadonlyArray<QuotaCounterKey & { count: number }>, reads: readonly QuotaCounterKey[],
      now: number, forgetEndedBefore: number): { duplicate: boolean, counts: QuotaCount[] } {
      return db.transaction(() => {
        const fresh = batches.claim(batchId, now)
        if (fresh) {
          statements.forgetEndedBefore.run(forgetEndedBefore)
          for (const use of uses) statements.add.run({ counter: use.counter, periodStart: use.periodStart, count: use.count, now })
        }
        return { duplicate: !fresh, counts: totals([...uses, ...reads]) }
      }).immediate()
    }
  }
}
