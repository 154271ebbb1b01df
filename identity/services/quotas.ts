import type { QuotaCounterKey, QuotaCount, QuotaStore } from '../store/quota-store.js'
import type { Clock } from './clock.js'

/**
 * How long a period's count is kept after its last use: past the longest period that
 * refills (a month, at most 31 days), so a count dropped belongs to a period that is
 * over. Counts of quotas that never refill are kept for good.
 */
export const ENDED_PERIOD_MEMORY_MS = 35 * 86_400_000

export type Quotas = ReturnType<typeof createQuotas>

/**
 * Quota counts: identity holds the authoritative total of every quota counter; each
 * gateway adds the units it let through and reads back the totals of all of them.
 */
export function createQuotas (options: { store: QuotaStore, clock: Clock }) {
  const { store, clock } = options
  return {
    /** Adds the uses once per batch id and answers the totals of every counter named in uses or reads. */
    record (batchId: string, uses: ReadonlyArray<QuotaCounterKey & { count: number }>, reads: readonly QuotaCounterKey[]): { duplicate: boolean, counts: QuotaCount[] } {
      const now = clock.now()
      return store.record(batchId, uses, reads, now, now - ENDED_PERIOD_MEMORY_MS)
    }
  }
}
