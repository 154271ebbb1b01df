import { KEY_OUTCOMES, type KeyUsageReceipt, type OutcomeCounts } from '../../common/internal-api.js'
import type { KeyUseReport } from '../store/api-keys-store.js'
import type { KeyUsageStore, SecretHour } from '../store/key-usage-store.js'
import type { ApiKeys } from './api-keys.js'
import type { Clock } from './clock.js'
import { rangeProblem, requireOrderedRange } from './query-range.js'

const HOUR_MS = 3_600_000
const DAY_MS = 86_400_000

/** The width of a bucket of a usage series: a UTC hour or a UTC day. */
export const USAGE_STEPS = ['hour', 'day'] as const
export type UsageStep = typeof USAGE_STEPS[number]
const STEP_MS: Record<UsageStep, number> = { hour: HOUR_MS, day: DAY_MS }
/** The range shown when none is asked for: the last 24 hours, or the last 30 days (the current one included). */
const DEFAULT_SPAN_MS: Record<UsageStep, number> = { hour: 24 * HOUR_MS, day: 30 * DAY_MS }
/** Most buckets in one series: 93 days of hours (a quarter and some); as many days. */
export const MAX_USAGE_BUCKETS = 24 * 93
/** Forgetting hours beyond the retention runs with a report's write, at most this often per process. */
const PRUNE_INTERVAL_MS = HOUR_MS

/** One bucket of a series: its start, each outcome, and the requests seen (upstream errors are among the allowed). */
export type UsageBucket = OutcomeCounts & { start: number, total: number }

export interface UsageSeries {
  keyId: string
  step: UsageStep
  /** The start of the first bucket and the end of the last: the range asked for, widened to whole buckets. */
  from: number
  to: number
  /** Every bucket of the range, oldest first, zero-filled where nothing was counted. */
  buckets: UsageBucket[]
  totals: OutcomeCounts & { total: number }
}

export interface UsageRange {
  /** ms since the epoch; absent: the default span before `to`. */
  from?: number | undefined
  /** ms since the epoch; absent: the end of the current hour or day. */
  to?: number | undefined
  step: UsageStep
}

export interface KeyUsageOptions {
  store: KeyUsageStore
  apiKeys: Pick<ApiKeys, 'get' | 'recordUses'>
  clock: Clock
  /** Hours older than this many days are forgotten (config.usageRetentionDays). */
  retentionDays: number
}

export type KeyUsage = ReturnType<typeof createKeyUsage>

const floorTo = (ms: number, stepMs: number): number => Math.floor(ms / stepMs) * stepMs
const ceilTo = (ms: number, stepMs: number): number => Math.ceil(ms / stepMs) * stepMs
const zero = (): OutcomeCounts => ({ allowed: 0, forbidden: 0, rate_limited: 0, quota_exhausted: 0, upstream_error: 0 })
/** The requests seen: an upstream error was allowed first, so it is counted there already. */
const totalOf = (counts: OutcomeCounts): number => counts.allowed + counts.forbidden + counts.rate_limited + counts.quota_exhausted

function addInto (into: OutcomeCounts, counts: OutcomeCounts): void {
  for (const outcome of KEY_OUTCOMES) into[outcome] += counts[outcome]
}

/**
 * Usage over time: the outcomes of each key's requests per hour, as gateways report
 * them (common/internal-api.ts, KeyUsageHour), kept for `retentionDays` and shown per
 * hour or per day.
 */
export function createKeyUsage (options: KeyUsageOptions) {
  const { store, apiKeys, clock } = options
  const retentionMs = options.retentionDays * DAY_MS
  let prunedAt = Number.NEGATIVE_INFINITY

  /** An older gateway's report has no hours: its uses count as allowed in the hour of their last use. */
  const asAllowed = (use: KeyUseReport): SecretHour => ({ lookupId: use.lookupId, hourStart: use.lastUsedAt, ...zero(), allowed: use.count })

  return {
    /**
     * Applies a gateway's report in one transaction, once per batch id: the uses (counts
     * and last use, services/api-keys.ts) and the hourly outcomes. An hour ahead of
     * identity's clock is taken as the current one; one already beyond the retention is
     * not kept. Every hour or so, the hours beyond the retention are forgotten on the way.
     */
    record (batchId: string, uses: readonly KeyUseReport[], hours: readonly SecretHour[] | null): KeyUsageReceipt {
      const now = clock.now()
      const cutoff = now - retentionMs
      const kept = (hours ?? uses.map(asAllowed))
        .map((hour) => ({ ...hour, hourStart: floorTo(Math.min(hour.hourStart, now), HOUR_MS) }))
        .filter((hour) => hour.hourStart >= cutoff && totalOf(hour) + hour.upstream_error > 0)
      return apiKeys.recordUses(batchId, uses, () => {
        store.add(kept)
        if (now - prunedAt < PRUNE_INTERVAL_MS) return
        store.forgetBefore(cutoff)
        prunedAt = now
      })
    },

    /**
     * A key's outcomes over a range, in buckets of an hour or a day (UTC), zero-filled.
     * Throws key_not_found for an unknown key, validation_failed for a range that ends
     * before it starts or holds more than MAX_USAGE_BUCKETS buckets.
     */
    series (keyId: string, range: UsageRange): UsageSeries {
      apiKeys.get(keyId)
      const stepMs = STEP_MS[range.step]
      // The current bucket is included whether or not `from` is given, even at its very first instant.
      const to = range.to ?? ceilTo(clock.now() + 1, stepMs)
      const from = range.from ?? to - DEFAULT_SPAN_MS[range.step]
      requireOrderedRange(from, to)
      const first = floorTo(from, stepMs)
      const end = ceilTo(to, stepMs)
      const count = (end - first) / stepMs
      if (count > MAX_USAGE_BUCKETS) throw rangeProblem('to', `must be within ${MAX_USAGE_BUCKETS} ${range.step}s of from (this range holds ${count})`)

      const buckets: UsageBucket[] = Array.from({ length: count }, (_, i) => ({ start: first + i * stepMs, ...zero(), total: 0 }))
      const totals = zero()
      for (const hour of store.hoursOf(keyId, first, end)) {
        const bucket = buckets[(floorTo(hour.hourStart, stepMs) - first) / stepMs]
        if (bucket === undefined) continue
        addInto(bucket, hour)
        addInto(totals, hour)
      }
      for (const bucket of buckets) bucket.total = totalOf(bucket)
      return { keyId, step: range.step, from: first, to: end, buckets, totals: { ...totals, total: totalOf(totals) } }
    }
  }
}
