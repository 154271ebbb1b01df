import type { FastifyBaseLogger } from 'fastify'
import {
  CountersUnavailableError, SeedNeededError, type CounterCheck, type CounterResult, type CounterStore
} from '../../common/traffic/counter.js'
import { redisLossModeOf, type TrafficPolicy } from '../../common/traffic/policy.js'
import { GatewayProblems } from '../errors.js'
import type { CounterSeries } from '../observability/hot-counter.js'
import type { GatewayMetrics } from '../observability/metrics.js'
import type { ScopedPolicy } from '../routing/index.js'
import { applyPolicies, type AppliedPolicies, type RequestParty } from './applied-policies.js'
import { createConcurrencySlots } from './concurrency-slots.js'
import type { QuotaLedger } from './quota-ledger.js'
import { legacyFields, rateLimitField, rateLimitPolicyField, type CountedCheck } from './rate-limit-fields.js'

export interface TrafficControlOptions {
  /** Where counts are kept: Redis when the gateway has it (shared by the replicas), else `local`. */
  counters: CounterStore
  /** This process's counts: the store without Redis, and the fallback of fail-open policies while Redis is lost. */
  local: CounterStore
  ledger: Pick<QuotaLedger, 'record' | 'seeded'>
  /** Policies of identity's public routes (login, refresh, logout, JWKS), which take no credential. */
  anonymous: readonly ScopedPolicy[]
  /** Also send X-RateLimit-Limit / -Remaining / -Reset. */
  legacyHeaders: boolean
  metrics: Pick<GatewayMetrics, 'trafficDecisions'>
  log: FastifyBaseLogger
  now?: () => number
}

type Outcome = 'allowed' | 'limited' | 'fallback' | 'unavailable'

/**
 * What traffic control decided for a request it let through: the fields every answer to
 * it carries (RateLimit-Policy, RateLimit and the legacy set), as name, value pairs, and
 * what gives back its concurrency slots once the answer is over.
 */
export interface Admission {
  readonly fields: readonly string[]
  readonly release: (() => void) | null
}

const NO_FIELDS: readonly string[] = Object.freeze([])
const UNLIMITED: Admission = Object.freeze({ fields: NO_FIELDS, release: null })

/** What a refusal says of each policy it broke: never whose count it was. */
function violation (policy: TrafficPolicy, retryAfter: number): Record<string, unknown> {
  return {
    name: policy.name,
    kind: policy.kind,
    limit: policy.limit,
    ...(policy.kind === 'rate' ? { window_seconds: policy.window_seconds } : {}),
    ...(policy.kind === 'quota' ? { period: policy.period } : {}),
    partition: policy.partition,
    retry_after: retryAfter
  }
}

/**
 * Rate limits, quotas and concurrency caps, applied by the gate once a request is
 * authorised (or, on identity's anonymous routes, once its route is known). A request
 * passes only if every policy that covers it has room: its route's and upstream's (the
 * upstreams file), its credential's (identity: the key's and its owner's roles', a
 * user's roles'), and for anonymous routes the gateway's per-IP default.
 *
 * Order: concurrency caps (in process), then the caller's own counts (key, user, IP),
 * then the counts every caller shares (route, upstream). A request refused by its own
 * counts never takes from the shared ones, so one client flooding cannot use up a
 * route's limit for others; a request refused by a shared count has still been
 * counted against its own (it was sent).
 *
 * Answers: the RateLimit-Policy and RateLimit fields on every response of a request
 * that a rate limit or quota covers; a 429 problem naming each policy broken, with
 * Retry-After (the longest wait of them); a 503 when a fail-closed policy cannot be
 * checked (Redis lost).
 */
export function createTrafficControl (options: TrafficControlOptions) {
  const { counters, local, ledger, metrics } = options
  const now = options.now ?? Date.now
  const slots = createConcurrencySlots()

  // Policy objects live as long as their config or cached credential: their series are found without building a key.
  const seriesByPolicy = new WeakMap<TrafficPolicy, Map<string, CounterSeries>>()
  function count (scope: string, policy: TrafficPolicy, outcome: Outcome): void {
    let bySlot = seriesByPolicy.get(policy)
    if (bySlot === undefined) seriesByPolicy.set(policy, bySlot = new Map())
    const slot = outcome + scope
    let series = bySlot.get(slot)
    if (series === undefined) {
      series = metrics.trafficDecisions.at(`${scope}\u0000${policy.name}\u0000${policy.kind}\u0000${outcome}`,
        () => ({ policy: policy.name, source: scope, kind: policy.kind, outcome }))
      bySlot.set(slot, series)
    }
    series.inc()
  }

  /** Checks that identity cannot seed: fail-closed ones make the request a 503, fail-open ones count from zero. */
  async function seed (checks: readonly CounterCheck[], failed: readonly CounterCheck[]): Promise<CounterCheck[]> {
    let seeded: CounterCheck[]
    try {
      seeded = await ledger.seeded(failed)
    } catch (err) {
      if (failed.some((check) => redisLossModeOf(check.policy) === 'closed')) {
        options.log.warn({ err }, 'quota counts cannot be read from identity; refusing requests under fail-closed quotas')
        throw GatewayProblems.trafficControlUnavailable()
      }
      seeded = failed.map((check) => ({ ...check, seed: 0 }))
    }
    const byId = new Map(seeded.map((check) => [check.id, check]))
    return checks.map((check) => byId.get(check.id) ?? check)
  }

  async function recover (store: CounterStore, checks: readonly CounterCheck[], err: unknown, fellBack: boolean): Promise<CounterResult[]> {
    if (err instanceof SeedNeededError) {
      const seeded = await seed(checks, err.checks)
      try {
        return await store.take(seeded)
      } catch (again) {
        // Another of the request's quota counters may have expired meanwhile: it is seeded in turn (a seeded one never asks again).
        return await recover(store, seeded, again, fellBack)
      }
    }
    if (err instanceof CountersUnavailableError && !fellBack) {
      if (checks.some((check) => redisLossModeOf(check.policy) === 'closed')) {
        for (const check of checks) count(check.scope, check.policy, 'unavailable')
        throw GatewayProblems.trafficControlUnavailable()
      }
      for (const check of checks) count(check.scope, check.policy, 'fallback')
      return await take(local, checks, true)
    }
    throw err
  }

  /** The store's answer, at once when the store answers at once (in process). */
  function take (store: CounterStore, checks: readonly CounterCheck[], fellBack = false): CounterResult[] | Promise<CounterResult[]> {
    try {
      const answer = store.take(checks)
      return answer instanceof Promise ? answer.catch(async (err: unknown) => await recover(store, checks, err, fellBack)) : answer
    } catch (err) {
      return recover(store, checks, err, fellBack)
    }
  }

  function refuse (counted: readonly CountedCheck[], fields: readonly string[]): never {
    const broken = counted.filter(({ result }) => result.retryAfterSeconds > 0)
    for (const { check } of broken) count(check.scope, check.policy, 'limited')
    const retryAfter = Math.max(1, ...broken.map(({ result }) => result.retryAfterSeconds))
    const first = broken[0]?.check.policy
    const quota = broken.find(({ check }) => check.policy.kind === 'quota')
    const headers: Record<string, string> = { 'retry-after': String(retryAfter) }
    for (let i = 0; i + 1 < fields.length; i += 2) {
      const [name, value] = [fields[i], fields[i + 1]]
      if (name !== undefined && value !== undefined) headers[name] = value
    }
    const extensions = { retry_after: retryAfter, policies: broken.map(({ check, result }) => violation(check.policy, result.retryAfterSeconds)) }
    if (quota !== undefined) throw GatewayProblems.quotaExhausted([quota.check.policy.name, String(quota.result.retryAfterSeconds)], { headers, extensions })
    throw GatewayProblems.rateLimited([first?.name ?? 'unknown', String(retryAfter)], { headers, extensions })
  }

  function fieldsOf (checks: readonly CounterCheck[], counted: readonly CountedCheck[]): readonly string[] {
    const fields = ['ratelimit-policy', rateLimitPolicyField(checks), 'ratelimit', rateLimitField(counted)]
    if (options.legacyHeaders) for (const [name, value] of Object.entries(legacyFields(counted))) fields.push(name, value)
    return fields
  }

  /**
   * The fields of every count asked, once the request is let through; a refusal
   * carries them too. `taken`: the counts whose units were taken (all of them, or the
   * caller's own when a shared count refused), reported to identity for quotas.
   */
  function finish (checks: readonly CounterCheck[], results: readonly CounterResult[], taken: readonly CounterCheck[]): readonly string[] {
    if (checks.length === 0) return NO_FIELDS
    const counted = checks.map((check, i): CountedCheck => {
      const result = results[i]
      if (result === undefined) throw new Error(`the counters answered ${results.length} results for ${checks.length} counts`)
      return { check, result }
    })
    const fields = fieldsOf(checks, counted)
    ledger.record(taken)
    for (const check of taken) count(check.scope, check.policy, 'allowed')
    if (taken.length < checks.length) refuse(counted, fields)
    return fields
  }

  const fits = (results: readonly CounterResult[]): boolean => results.every((result) => result.allowed)

  /** The shared counts, once the caller's own let the request through. */
  function takeShared (applied: AppliedPolicies, ownResults: readonly CounterResult[]): readonly string[] | Promise<readonly string[]> {
    if (!fits(ownResults)) return finish(applied.own, ownResults, [])
    if (applied.shared.length === 0) return finish(applied.own, ownResults, applied.own)
    const done = (sharedResults: readonly CounterResult[]): readonly string[] => {
      const all = [...applied.own, ...applied.shared]
      return finish(all, [...ownResults, ...sharedResults], fits(sharedResults) ? all : applied.own)
    }
    const shared = take(counters, applied.shared)
    return shared instanceof Promise ? shared.then(done) : done(shared)
  }

  function holdSlots (applied: AppliedPolicies): (() => void) | null {
    if (applied.concurrency.length === 0) return null
    const ids = applied.concurrency.map((entry) => entry.id)
    const full = slots.take(ids, applied.concurrency.map((entry) => entry.policy.limit))
    if (full >= 0) {
      const { scope, policy } = applied.concurrency[full] as AppliedPolicies['concurrency'][number]
      count(scope, policy, 'limited')
      throw GatewayProblems.concurrencyLimited([policy.name], {
        headers: { 'retry-after': '1' },
        extensions: { retry_after: 1, policies: [violation(policy, 1)] }
      })
    }
    for (const { scope, policy } of applied.concurrency) count(scope, policy, 'allowed')
    let held = true
    return (): void => {
      if (!held) return
      held = false
      slots.release(ids)
    }
  }

  /** The request's policies. */
  function admitPolicies (party: RequestParty): Admission | Promise<Admission> {
    const routePolicies = party.route.auth === 'none' ? options.anonymous : party.route.traffic.policies
    const granted = party.principal?.policies ?? []
    if (routePolicies.length === 0 && granted.length === 0) return UNLIMITED
    const policies = granted.length === 0
      ? routePolicies
      : [...routePolicies, ...granted.map(({ source, policy }) => ({ scope: source, policy }))]
    const applied = applyPolicies(policies, party, party.route.traffic.cost, now())
    const release = holdSlots(applied)
    const admitted = (fields: readonly string[]): Admission => release === null && fields.length === 0 ? UNLIMITED : { fields, release }
    try {
      if (applied.own.length === 0 && applied.shared.length === 0) return admitted(NO_FIELDS)
      const own = applied.own.length === 0 ? [] : take(counters, applied.own)
      const fields = own instanceof Promise ? own.then((results) => takeShared(applied, results)) : takeShared(applied, own)
      if (!(fields instanceof Promise)) return admitted(fields)
      return fields.then(admitted, (err: unknown) => {
        release?.()
        throw err
      })
    } catch (err) {
      release?.()
      throw err
    }
  }

  return {
    /**
     * Lets the request through, with what its answer carries (at once, or a promise
     * when Redis is asked), or throws the problem to answer with. The request's policies
     * are its route's, then those of its credential, or the anonymous defaults on
     * identity's routes. The admission's `release` must be called once the answer is
     * over (sent in full, or the connection gone first).
     */
    admit (party: RequestParty): Admission | Promise<Admission> {
      return admitPolicies(party)
    }
  }
}

export type TrafficControl = ReturnType<typeof createTrafficControl>
