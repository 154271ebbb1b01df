import { Type, type Static } from 'typebox'

/**
 * Traffic policies: rate limits, quotas and concurrency caps. One shape wherever a
 * policy is declared (an upstream or a route in the upstreams file, an API key or a
 * role in identity, the gateway's default for anonymous routes), so identity stores
 * exactly what the gateway enforces.
 *
 * - `rate`: at most `limit` units in any `window_seconds` (a sliding window, exact).
 * - `quota`: at most `limit` units per calendar `period` (UTC), or in all (`never`
 *   refills); identity keeps the authoritative count.
 * - `concurrency`: at most `limit` requests of the partition in flight at once, per
 *   gateway process.
 *
 * The partition says who shares one count: `key` (every secret of one API key),
 * `user` (every key and session of one user; a key without an owner counts alone),
 * `ip` (one client address; IPv6 by its /64), `route` or `upstream` (every caller
 * together).
 */

export const POLICY_NAME_PATTERN = '^[a-z0-9][a-z0-9_.-]{0,62}$'
export const PolicyName = Type.String({ pattern: POLICY_NAME_PATTERN, description: 'Named in RateLimit fields and in 429 problems: lower case letters, digits, `_`, `.` and `-`.' })

export const PARTITIONS = ['key', 'user', 'ip', 'route', 'upstream'] as const
export type Partition = typeof PARTITIONS[number]
export const PartitionSchema = Type.Enum(PARTITIONS)

export const REDIS_LOSS_MODES = ['open', 'closed'] as const
export type RedisLossMode = typeof REDIS_LOSS_MODES[number]
/** `open`: each gateway counts alone while Redis is away; `closed`: 503 until it is back. */
export const RedisLossSchema = Type.Enum(REDIS_LOSS_MODES)

/**
 * The largest limit of a rate policy: the sliding window keeps the time of each unit
 * still in the window (8 bytes each per partition in use). Larger volumes are quotas,
 * which keep one count per period.
 */
export const MAX_RATE_LIMIT = 100_000
export const MAX_WINDOW_SECONDS = 86_400

export const QUOTA_PERIODS = ['minute', 'hour', 'day', 'month', 'never'] as const
export type QuotaPeriod = typeof QUOTA_PERIODS[number]

export const RatePolicySchema = Type.Object({
  name: PolicyName,
  kind: Type.Literal('rate'),
  limit: Type.Integer({ minimum: 1, maximum: MAX_RATE_LIMIT }),
  window_seconds: Type.Integer({ minimum: 1, maximum: MAX_WINDOW_SECONDS }),
  partition: PartitionSchema,
  /** Default `open`. */
  on_redis_loss: Type.Optional(RedisLossSchema)
}, { additionalProperties: false })

export const QuotaPolicySchema = Type.Object({
  name: PolicyName,
  kind: Type.Literal('quota'),
  limit: Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER }),
  /** When the count starts again from zero (UTC calendar); `never`: `limit` uses in all. */
  period: Type.Enum(QUOTA_PERIODS),
  partition: PartitionSchema,
  /** Default `closed`. */
  on_redis_loss: Type.Optional(RedisLossSchema)
}, { additionalProperties: false })

export const ConcurrencyPolicySchema = Type.Object({
  name: PolicyName,
  kind: Type.Literal('concurrency'),
  limit: Type.Integer({ minimum: 1, maximum: 1_000_000 }),
  partition: PartitionSchema
}, { additionalProperties: false })

export const TrafficPolicySchema = Type.Union([RatePolicySchema, QuotaPolicySchema, ConcurrencyPolicySchema])
export type RatePolicy = Static<typeof RatePolicySchema>
export type QuotaPolicy = Static<typeof QuotaPolicySchema>
export type ConcurrencyPolicy = Static<typeof ConcurrencyPolicySchema>
export type TrafficPolicy = Static<typeof TrafficPolicySchema>

/** Most policies one place may declare: every one is checked on every request it covers. */
export const MAX_POLICIES_PER_OWNER = 8
export const TrafficPolicies = Type.Array(TrafficPolicySchema, { maxItems: MAX_POLICIES_PER_OWNER })

/** What a policy does when its counters in Redis cannot be reached. */
export function redisLossModeOf (policy: TrafficPolicy): RedisLossMode {
  if (policy.kind === 'concurrency') return 'open'
  return policy.on_redis_loss ?? (policy.kind === 'quota' ? 'closed' : 'open')
}

/** Problems with a list of policies that a schema cannot say: two of one name in one place. */
export function policyListProblems (policies: readonly TrafficPolicy[]): string[] {
  const seen = new Set<string>()
  const problems: string[] = []
  for (const [index, policy] of policies.entries()) {
    if (seen.has(policy.name)) problems.push(`${index}/name: "${policy.name}" is declared twice`)
    seen.add(policy.name)
  }
  return problems
}

/**
 * A policy as identity hands it to the gateway with a key's verdict or in an access
 * token: `source` says where it was declared (`key`, or `role:<name>`), so that two
 * policies of one name from two places keep apart counts.
 */
export const GrantedPolicy = Type.Object({
  source: Type.String({ pattern: '^(key|role:[A-Za-z0-9_.:-]{1,64})$' }),
  policy: TrafficPolicySchema
}, { additionalProperties: false })
export type GrantedPolicy = Static<typeof GrantedPolicy>
/** A key's own policies and its owner's roles' together, or a user's roles'. */
export const GrantedPolicies = Type.Array(GrantedPolicy, { maxItems: 64 })
