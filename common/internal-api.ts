import { Type, type Static } from 'typebox'

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
    key: Type.Object({ id: Type.String(), name: Type.String(), permissions: Type.Array(Type.String()), expires_at: NullableTimestamp }),
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
