import type { FastifyBaseLogger } from 'fastify'
import { QUOTA_USAGE_MAX_ENTRIES, type QuotaUse, type QuotaUsageReport } from '../../common/internal-api.js'
import { randomBase62 } from '../../common/random.js'
import type { CounterCheck } from '../../common/traffic/counter.js'
import { refusedForGood, type IdentityClient } from '../auth/identity-client.js'

export interface QuotaLedgerOptions {
  identity: Pick<IdentityClient, 'quotaUsage'>
  /** How often the units counted here are reported to identity. */
  intervalMs: number
  /** Most counters whose units wait for the next report; units of one more are not reported (logged). */
  maxPending: number
  log: FastifyBaseLogger
}

const slotOf = (counter: string, periodStart: number): string => `${periodStart} ${counter}`

/**
 * The gateway's side of identity's authoritative quota counts. The counters in Redis
 * (or in this process) are what requests are checked against; identity holds the
 * count that survives them: every unit let through is reported to it every
 * `intervalMs` (each report under a batch id identity applies once), and a counter
 * that is missing (Redis restarted, a new period, a new gateway) starts again from
 * identity's count. What is lost is what was counted but not yet reported when the
 * counters were: at most one interval's units.
 */
export function createQuotaLedger (options: QuotaLedgerOptions) {
  const pending = new Map<string, QuotaUse>()
  /** Reports identity has not acknowledged, sent again first, under their own ids. */
  let unacknowledged: QuotaUsageReport[] = []
  let timer: NodeJS.Timeout | undefined
  let flushing: Promise<void> | null = null
  let droppedLogged = false

  async function flush (): Promise<void> {
    const reports = unacknowledged
    unacknowledged = []
    let uses: QuotaUse[] = []
    for (const use of pending.values()) {
      uses.push(use)
      if (uses.length === QUOTA_USAGE_MAX_ENTRIES) {
        reports.push({ batch_id: randomBase62(24), uses, read: [] })
        uses = []
      }
    }
    if (uses.length > 0) reports.push({ batch_id: randomBase62(24), uses, read: [] })
    pending.clear()
    for (const [i, report] of reports.entries()) {
      try {
        await options.identity.quotaUsage(report)
      } catch (err) {
        if (refusedForGood(err)) {
          // Sent again it would be refused again, and hold back every report after it.
          options.log.error({ err, counters: report.uses.length }, 'identity refused a quota usage report; its units are not reported')
          continue
        }
        unacknowledged = [...reports.slice(i), ...unacknowledged]
        options.log.warn({ err, reports: reports.length - i }, 'quota usage not reported to identity; sending it again later')
        return
      }
    }
  }

  function tick (): void {
    if (flushing !== null) return
    flushing = flush().finally(() => { flushing = null })
  }

  return {
    /** Counts the units of checks let through, for the next report. */
    record (checks: readonly CounterCheck[]): void {
      for (const check of checks) {
        if (check.policy.kind !== 'quota') continue
        const slot = slotOf(check.id, check.periodStart)
        const use = pending.get(slot)
        if (use !== undefined) {
          use.count += check.cost
        } else if (pending.size < options.maxPending) {
          pending.set(slot, { counter: check.id, period_start: check.periodStart, count: check.cost })
        } else if (!droppedLogged) {
          droppedLogged = true
          options.log.error({ maxPending: options.maxPending }, 'too many quota counters waiting for a report; units of further ones are not reported to identity')
        }
      }
    },

    /**
     * The checks with their seed: identity's count of each, plus what this gateway
     * counted and has not reported yet. Throws when identity cannot be asked.
     */
    async seeded (checks: readonly CounterCheck[]): Promise<CounterCheck[]> {
      const read = checks.map((check) => ({ counter: check.id, period_start: check.periodStart }))
      const totals = await options.identity.quotaUsage({ batch_id: randomBase62(24), uses: [], read })
      const used = new Map(totals.counters.map((entry) => [slotOf(entry.counter, entry.period_start), entry.used]))
      return checks.map((check) => {
        const slot = slotOf(check.id, check.periodStart)
        return { ...check, seed: (used.get(slot) ?? 0) + (pending.get(slot)?.count ?? 0) }
      })
    },

    start (): void {
      timer = setInterval(tick, options.intervalMs)
      timer.unref()
    },

    /** Stops the timer and reports what is left (once; a failure is logged). */
    async close (): Promise<void> {
      clearInterval(timer)
      await flushing
      await flush()
    }
  }
}

export type QuotaLedger = ReturnType<typeof createQuotaLedger>
