import { Type, type Static } from 'typebox'
import { LOOKUP_ID_PATTERN } from './api-key-format.js'
import { GrantedPolicies } from './traffic/policy.js'

/**
 * Identity's internal API, which gateways call with the service credential: identity
 * declares its routes with these schemas and the gateway checks identity's answers
 * against the same ones. Members may be added to an answer (the gateway ignores what
 * it does not know); anything else here is a change to both services.
 */

const Timestamp = Type.String({ format: 'date-time' })
const NullableTimestamp = Type.Union([Timestamp, Type.Null()])

/** POST: the gateway's cache-miss path for API keys. */
export const KEYS_VERIFY_PATH = '/internal/keys/verify'
/** GET: sessions revoked since a time, the gateway's catch-up when events may have been lost. */
export const SESSIONS_REVOKED_PATH = '/internal/sessions/revoked'
/** POST: the API key uses a gateway counted since its last report, applied in one transaction. */
export const KEYS_USAGE_PATH = '/internal/keys/usage'

/**
 * Why identity refuses a key. Without a verified secret only `malformed` or `unknown`:
 * a key's state is told to its holder alone.
 */
export const KEY_INVALID_REASONS = ['malformed', 'unknown', 'expired', 'revoked', 'disabled', 'secret_retired'] as const
export const KeyInvalidReason = Type.Enum(KEY_INVALID_REASONS)
export type KeyInvalidReason = Static<typeof KeyInvalidReason>

/** Loose on purpose: any string is answered (malformed ones without a database read). */
export const KeyVerifyRequest = Type.Object({ key: Type.String({ maxLength: 1024 }) }, { additionalProperties: false })

export const KeyVerdict = Type.Union([
  Type.Object({
    valid: Type.Literal(true),
    key: Type.Object({
      id: Type.String(),
      name: Type.String(),
      permissions: Type.Array(Type.String()),
      expires_at: NullableTimestamp,
      /** The user the key belongs to, whose per-user policies it shares; null for a key of its own. */
      owner_user_id: Type.Optional(Type.Union([Type.String(), Type.Null()])),
      /** The key's traffic policies and its owner's roles'; absent from an identity that has none. */
      policies: Type.Optional(GrantedPolicies)
    }),
    /** Present when the old secret of a rotation was used: the gateway adds Deprecation/Sunset. */
    deprecation: Type.Union([Type.Object({ deprecated_at: Timestamp, sunset_at: Timestamp }), Type.Null()])
  }),
  Type.Object({
    valid: Type.Literal(false),
    reason: KeyInvalidReason
  })
])
export type KeyVerdict = Static<typeof KeyVerdict>

/** Without `since`, the last access-token lifetime: older revocations cannot have live tokens left. */
export const RevokedSessionsQuery = Type.Object({ since: Type.Optional(Timestamp) }, { additionalProperties: false })

export const RevokedSession = Type.Object({ id: Type.String(), revoked_at: Timestamp, expires_at: Timestamp })
export type RevokedSession = Static<typeof RevokedSession>

/** Oldest first; a gateway pages by passing the last `revoked_at` as `since`. */
export const RevokedSessions = Type.Object({ now: Timestamp, sessions: Type.Array(RevokedSession) })
export type RevokedSessions = Static<typeof RevokedSessions>

/** Most lookup ids in one usage report: a gateway with more sends several. */
export const KEY_USAGE_MAX_ENTRIES = 500
/** A route pattern is a prefix and a path of at most 1024 characters each (gateway/routing/schema.ts). */
export const KEY_USAGE_ROUTE_MAX_LENGTH = 2_048
/** An IPv6 address with a zone fits with room to spare. */
export const KEY_USAGE_IP_MAX_LENGTH = 64
/**
 * What a route pattern (`/billing/invoices/:id`, `/reports/*`) and an IP address are
 * made of. Nothing outside these reaches identity's database, so no view or table
 * ever shows a quote, a backslash or a control character from them, and no
 * character of an entry needs escaping in JSON (which keeps the body limit exact).
 */
export const KEY_USAGE_ROUTE_PATTERN = '^/[0-9A-Za-z._~:*/-]*$'
export const KEY_USAGE_IP_PATTERN = '^[0-9A-Za-z.:%_-]+$'
/** Most hourly outcome entries in one usage report: a gateway with more sends several. */
export const KEY_USAGE_MAX_HOURS = 500
/**
 * The body limit of the usage route: a use at its longest (a 2048-character route,
 * a 64-character address, the largest count) is about 2 300 bytes of JSON; an hourly
 * entry with every count at its largest about 230.
 */
export const KEY_USAGE_BODY_LIMIT_BYTES = KEY_USAGE_MAX_ENTRIES * 2_560 + KEY_USAGE_MAX_HOURS * 320

/** The uses of one secret (its lookup id), with the time, route and client address of the last one. */
export const KeyUse = Type.Object({
  lookup_id: Type.String({ pattern: LOOKUP_ID_PATTERN }),
  count: Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER }),
  last_used_at: Timestamp,
  /** The matched route pattern, never the raw path; null when it did not fit the pattern above. */
  last_route: Type.Union([Type.String({ maxLength: KEY_USAGE_ROUTE_MAX_LENGTH, pattern: KEY_USAGE_ROUTE_PATTERN }), Type.Null()]),
  /** The client's address as the gateway's trusted proxy chain gave it; null when it was not an IP address. */
  last_ip: Type.Union([Type.String({ maxLength: KEY_USAGE_IP_MAX_LENGTH, pattern: KEY_USAGE_IP_PATTERN }), Type.Null()])
}, { additionalProperties: false })
export type KeyUse = Static<typeof KeyUse>

/**
 * What became of the requests a key was verified for, counted per hour.
 * `allowed`: let through (the uses above, per hour); `forbidden`: refused for a
 * permission (403); `rate_limited`: refused by a rate or concurrency limit (429);
 * `quota_exhausted`: refused by a used-up quota (429); `upstream_error`: let through,
 * and answered 5xx (the upstream's answer, or the gateway's 502/504 when it failed):
 * a part of `allowed`, not besides it.
 */
export const KEY_OUTCOMES = ['allowed', 'forbidden', 'rate_limited', 'quota_exhausted', 'upstream_error'] as const
export type KeyOutcome = typeof KEY_OUTCOMES[number]
export type OutcomeCounts = Record<KeyOutcome, number>

const OutcomeCount = Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER })

/** The outcomes of one secret's requests (its lookup id) in one UTC hour, by the gateway's clock. */
export const KeyUsageHour = Type.Object({
  lookup_id: Type.String({ pattern: LOOKUP_ID_PATTERN }),
  /** The start of the hour; identity takes the whole hour this time falls in. */
  hour_start: Timestamp,
  allowed: OutcomeCount,
  forbidden: OutcomeCount,
  rate_limited: OutcomeCount,
  quota_exhausted: OutcomeCount,
  upstream_error: OutcomeCount
}, { additionalProperties: false })
export type KeyUsageHour = Static<typeof KeyUsageHour>

/**
 * A usage report. `batch_id` is chosen by the gateway and kept when a report is sent
 * again after a failure: identity applies each id once, so an answer lost after the
 * commit does not count the uses twice. It holds at least one use or hour.
 *
 * `hours` came later, with `uses` allowed empty (a report of refusals only). A report
 * without it (an older gateway) has its uses counted as allowed in the hour of their
 * last use. An identity older than `hours` refuses a report carrying it (400): the
 * gateway then sends the same batch again without it, when it has uses, so use counts
 * keep arriving while identity is upgraded (the hourly outcomes are lost meanwhile).
 */
export const KeyUsageReport = Type.Object({
  batch_id: Type.String({ pattern: '^[0-9A-Za-z_-]{16,64}$' }),
  uses: Type.Array(KeyUse, { maxItems: KEY_USAGE_MAX_ENTRIES }),
  hours: Type.Optional(Type.Array(KeyUsageHour, { maxItems: KEY_USAGE_MAX_HOURS }))
}, { additionalProperties: false })
export type KeyUsageReport = Static<typeof KeyUsageReport>

/** `unknown`: lookup ids no secret has (a key deleted since), ignored; `duplicate`: the batch was applied before, nothing changed. */
export const KeyUsageReceipt = Type.Object({
  applied: Type.Integer({ minimum: 0 }),
  unknown: Type.Integer({ minimum: 0 }),
  duplicate: Type.Boolean()
})
export type KeyUsageReceipt = Static<typeof KeyUsageReceipt>

/** POST: quota units a gateway counted since its last report, and the totals it asks for. */
export const QUOTA_USAGE_PATH = '/internal/quotas/usage'
/** Most counters in one quota report (uses and reads each). */
export const QUOTA_USAGE_MAX_ENTRIES = 500
/**
 * A quota counter's name, chosen by the gateway: `<scope>|<policy>|<partition>`, such as
 * `key|monthly|k:key_123` or `route:GET:/reports|daily|u:usr_9`. Printable ASCII without
 * quotes or backslashes, so it never needs escaping.
 */
export const QUOTA_COUNTER_PATTERN = '^[!#-\\[\\]-~]{1,2600}$'
const quotaCounterMembers = {
  counter: Type.String({ pattern: QUOTA_COUNTER_PATTERN, maxLength: 2600 }),
  /** Start of the counted period, ms since the epoch (UTC calendar); 0 for a quota that never refills. */
  period_start: Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER })
}
export const QuotaUse = Type.Object({ ...quotaCounterMembers, count: Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER }) }, { additionalProperties: false })
export type QuotaUse = Static<typeof QuotaUse>
/** A quota counter in one period. */
export const QuotaCounterRef = Type.Object(quotaCounterMembers, { additionalProperties: false })

/**
 * A quota report: `uses` are added (once per `batch_id`, as for key usage), then the
 * totals of every counter in `uses` and `read` are answered.
 */
export const QuotaUsageReport = Type.Object({
  batch_id: Type.String({ pattern: '^[0-9A-Za-z_-]{16,64}$' }),
  uses: Type.Array(QuotaUse, { maxItems: QUOTA_USAGE_MAX_ENTRIES }),
  read: Type.Array(QuotaCounterRef, { maxItems: QUOTA_USAGE_MAX_ENTRIES })
}, { additionalProperties: false })
export type QuotaUsageReport = Static<typeof QuotaUsageReport>

export const QuotaTotals = Type.Object({
  /** The batch was applied before: nothing was added again. */
  duplicate: Type.Boolean(),
  counters: Type.Array(Type.Object({ ...quotaCounterMembers, used: Type.Integer({ minimum: 0 }) }))
})
export type QuotaTotals = Static<typeof QuotaTotals>
