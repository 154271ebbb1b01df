import type { QuotaPeriod } from './policy.js'

/**
 * A quota that never refills has no period end: its counter is kept this long from
 * its last use before identity's count is read again, and a refusal says to retry
 * after it (more uses are granted by changing the policy).
 */
const NEVER_CACHE_MS = 86_400_000

/** The UTC calendar period holding `now` (ms): where a quota's count starts and when it starts again. */
export function quotaPeriodAt (period: QuotaPeriod, now: number): { start: number, end: number } {
  switch (period) {
    case 'minute': return aligned(now, 60_000)
    case 'hour': return aligned(now, 3_600_000)
    case 'day': return aligned(now, 86_400_000)
    case 'month': {
      const date = new Date(now)
      const start = Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), 1)
      return { start, end: Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + 1, 1) }
    }
    case 'never': return { start: 0, end: now + NEVER_CACHE_MS }
  }
}

function aligned (now: number, length: number): { start: number, end: number } {
  const start = now - (now % length)
  return { start, end: start + length }
}
