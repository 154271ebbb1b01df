import type { QuotaPolicy, RatePolicy } from './policy.js'

/**
 * One count a request must fit in: a rate or quota policy applied to one partition.
 * `id` names the count (what is counted where, for whom), `tag` the partition: the
 * counts of one tag are checked and taken together, and live in one Redis Cluster
 * slot. `periodStart`/`periodEnd` (ms) are a quota's current period.
 */
export interface CounterCheck {
  id: string
  /** Where the policy was declared (`key`, `role:<name>`, `upstream:<name>`, …): what metrics name it by. */
  scope: string
  tag: string
  policy: RatePolicy | QuotaPolicy
  /** Units to take; 0 looks without taking (what is left, and when more frees). */
  cost: number
  periodStart: number
  periodEnd: number
  /** A quota's count as identity last said, used when the counter itself has none (after a restart). */
  seed: number | undefined
}

/** The answer for one count, whether or not the request was let through. */
export interface CounterResult {
  allowed: boolean
  /** Units left after this request (when the request is refused: the units left now). */
  remaining: number
  /** Seconds until more units are free: the oldest counted unit leaves the window, or the quota period ends. */
  resetSeconds: number
  /** When refused, seconds until this request's cost would fit. */
  retryAfterSeconds: number
}

/** The counters could not be asked (Redis lost): the caller applies each policy's fallback. */
export class CountersUnavailableError extends Error {
  override readonly name = 'CountersUnavailableError'
}

/** A quota counter the store does not hold and whose seed is not known: ask identity, then check again. */
export class SeedNeededError extends Error {
  override readonly name = 'SeedNeededError'
  constructor (readonly checks: readonly CounterCheck[]) { super('quota counters need their count from identity') }
}

/**
 * Where counts are kept. `take` checks every count of the request and takes the cost
 * from all of them only when all have room (all or nothing); the answers come in the
 * order of `checks`.
 */
export interface CounterStore {
  take: (checks: readonly CounterCheck[]) => CounterResult[] | Promise<CounterResult[]>
  /** Drops the counts of `checks`: they start again from nothing (a login that succeeded clears its e-mail's failures). */
  forget: (checks: readonly CounterCheck[]) => void | Promise<void>
}

/** A store that answers at once: the counts a process keeps itself. */
export interface SyncCounterStore extends CounterStore {
  take: (checks: readonly CounterCheck[]) => CounterResult[]
  forget: (checks: readonly CounterCheck[]) => void
}

/** Whole seconds, rounding up, never below `floor`. */
export function ceilSeconds (ms: number, floor = 0): number {
  return Math.max(floor, Math.ceil(ms / 1000))
}
