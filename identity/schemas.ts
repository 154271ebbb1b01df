import { Type } from 'typebox'
import { PERMISSION_PATTERN } from '../common/permissions.js'
import { TrafficPolicies } from '../common/traffic/policy.js'
import { KEY_ORIGINS } from './store/api-keys-store.js'
import { KEY_LIST_STATUSES } from './store/key-list-filter.js'

/**
 * JSON schemas shared by identity's routes. Every body is closed
 * (`additionalProperties: false`): an unknown member is a 400, not ignored.
 */
const closed = { additionalProperties: false } as const

export const Timestamp = Type.String({ format: 'date-time' })
export const NullableTimestamp = Type.Union([Timestamp, Type.Null()])
const NullableString = Type.Union([Type.String(), Type.Null()])
/** The last 4 characters of a key's text, shown with its prefix to tell keys apart; null for secrets made before they were kept. */
const KeyLast4 = Type.Union([Type.String({ minLength: 4, maxLength: 4 }), Type.Null()])

/** OWASP ASVS 2.1: at least 8 characters, at least 64 allowed, no composition rules. */
export const Password = Type.String({ minLength: 8, maxLength: 128 })
export const Email = Type.String({ format: 'email', minLength: 3, maxLength: 254 })
export const Permission = Type.String({ pattern: PERMISSION_PATTERN, maxLength: 129 })
export const Permissions = Type.Array(Permission, { maxItems: 256, uniqueItems: true })
export const RoleName = Type.String({ pattern: '^[a-z][a-z0-9_-]{0,63}$' })
/**
 * Printable names: no control characters, C0 or C1 (they would break logs and terminals,
 * and some terminals read U+009B as an escape), no line or paragraph separators, and no
 * bidirectional overrides or isolates (a listing would show a name other than it is).
 */
export const KeyName = Type.String({ minLength: 1, maxLength: 100, pattern: '^[^\\u0000-\\u001f\\u007f-\\u009f\\u2028\\u2029\\u202a-\\u202e\\u2066-\\u2069]+$' })
export const Id = Type.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9_]+$' })
export const IdParams = Type.Object({ id: Id }, closed)
/** Most roles one user may hold. */
export const MAX_ROLES_PER_USER = 64
/** Longest grace an operator may give an old secret after a rotation: 90 days. */
export const GraceSeconds = Type.Integer({ minimum: 0, maximum: 7_776_000 })
/** A self-service key lifetime a role may set, in days (as IDENTITY_SELF_SERVICE_KEY_MAX_LIFETIME_DAYS). */
export const KeyLifetimeDays = Type.Integer({ minimum: 1, maximum: 3650 })
/** Page size of session listings. */
export const SessionListLimit = Type.Integer({ minimum: 1, maximum: 1000, default: 100 })

export const TokenSet = Type.Object({
  token_type: Type.Literal('Bearer'),
  expires_in: Type.Integer(),
  access_token: Type.String(),
  refresh_token: Type.String()
})

export const LoginBody = Type.Object({
  session: Type.Object({
    email: Type.String({ minLength: 1, maxLength: 254 }),
    password: Type.String({ minLength: 1, maxLength: 1024 })
  }, closed)
}, closed)

export const RefreshBody = Type.Object({
  refresh_token: Type.String({ minLength: 1, maxLength: 512 })
}, closed)

export const BearerHeaders = Type.Object({ authorization: Type.Optional(Type.String()) })

export const UserView = Type.Object({
  id: Type.String(),
  email: Type.String(),
  roles: Type.Array(Type.String()),
  permissions: Type.Array(Type.String()),
  status: Type.Union([Type.Literal('active'), Type.Literal('disabled')]),
  created_at: Timestamp,
  updated_at: Timestamp,
  password_changed_at: Timestamp,
  disabled_at: NullableTimestamp
})

export const RoleView = Type.Object({
  name: Type.String(),
  permissions: Type.Array(Type.String()),
  policies: TrafficPolicies,
  /** The longest lifetime a holder may give a key through /me/keys; null: the configured default. */
  key_max_lifetime_days: Type.Union([KeyLifetimeDays, Type.Null()]),
  created_at: Timestamp,
  updated_at: Timestamp
})

export const SessionView = Type.Object({
  id: Type.String(),
  user_id: Type.String(),
  ip_address: Type.String(),
  user_agent: Type.String(),
  status: Type.Union([Type.Literal('active'), Type.Literal('revoked'), Type.Literal('expired')]),
  created_at: Timestamp,
  last_used_at: Timestamp,
  expires_at: Timestamp,
  revoked_at: NullableTimestamp,
  revoked_reason: Type.Union([Type.String(), Type.Null()])
})

const KeySecretView = Type.Object({
  key_prefix: Type.String(),
  key_last4: KeyLast4,
  state: Type.Union([Type.Literal('current'), Type.Literal('grace'), Type.Literal('retired')]),
  created_at: Timestamp,
  retired_at: NullableTimestamp,
  grace_until: NullableTimestamp,
  last_used_at: NullableTimestamp,
  /** The route pattern and client address of that last use, as a gateway reported them. */
  last_used_route: NullableString,
  last_used_ip: NullableString,
  use_count: Type.Integer()
})

export const ApiKeyView = Type.Object({
  id: Type.String(),
  name: Type.String(),
  /** Where it was made: the admin API, the CLI, its owner through /me/keys, or the demo's seeding. */
  origin: Type.Enum(KEY_ORIGINS),
  key_prefix: Type.String(),
  key_last4: KeyLast4,
  permissions: Type.Array(Type.String()),
  /** The key's own traffic policies; its owner's roles' apply too. */
  policies: TrafficPolicies,
  /** The user the key belongs to: per-user policies count its uses with theirs. */
  owner_user_id: NullableString,
  status: Type.Union([Type.Literal('active'), Type.Literal('disabled'), Type.Literal('revoked'), Type.Literal('expired')]),
  expires_at: NullableTimestamp,
  created_at: Timestamp,
  updated_at: Timestamp,
  /** The last use of any of its secrets that a gateway reported, and its route pattern and client address. */
  last_used_at: NullableTimestamp,
  last_used_route: NullableString,
  last_used_ip: NullableString,
  disabled_at: NullableTimestamp,
  revoked_at: NullableTimestamp,
  /** During a rotation's grace period: how the old secret is still being used. */
  rotation: Type.Union([Type.Object({
    old_key_prefix: Type.String(),
    old_key_last4: KeyLast4,
    grace_until: Timestamp,
    old_secret_use_count: Type.Integer(),
    old_secret_last_used_at: NullableTimestamp
  }), Type.Null()]),
  secrets: Type.Array(KeySecretView)
})

export const CreatedKeyView = Type.Object({
  api_key: ApiKeyView,
  /** The full key: shown in this answer only. */
  key: Type.String(),
  warnings: Type.Array(Type.String())
})

/** One of a user's own live sessions, as GET /me/sessions shows it. */
export const OwnSessionView = Type.Object({
  id: Type.String(),
  ip_address: Type.String(),
  user_agent: Type.String(),
  created_at: Timestamp,
  last_used_at: Timestamp,
  expires_at: Timestamp,
  /** The session of the presented access token. */
  current: Type.Boolean()
})

export const SigningKeyView = Type.Object({
  kid: Type.String(),
  alg: Type.String(),
  status: Type.Union([Type.Literal('active'), Type.Literal('published'), Type.Literal('retired')]),
  created_at: Timestamp,
  retired_at: NullableTimestamp,
  publish_until: NullableTimestamp
})

export const Jwks = Type.Object({
  keys: Type.Array(Type.Object({
    kty: Type.String(),
    crv: Type.Optional(Type.String()),
    x: Type.Optional(Type.String()),
    y: Type.Optional(Type.String()),
    kid: Type.String(),
    alg: Type.String(),
    use: Type.String()
  }))
})

/** A key hygiene query's number of days (`GET /admin/keys?expiring_within_days=7`, `portier keys list --idle 90d`). */
const keyListDays = (description: string) => Type.Integer({ minimum: 1, maximum: 36_500, description })
export const KeyListDays = keyListDays('a number of days')
export const KeyListStatusSchema = Type.Enum(KEY_LIST_STATUSES, {
  description: 'active, disabled, revoked or expired as the key shows it; rotating: a retired secret still in its grace period (not revoked)'
})

/** GET /admin/keys filters: every one given must hold. */
export const KeyListQuery = Type.Object({
  owner: Type.Optional(Id),
  status: Type.Optional(KeyListStatusSchema),
  expiring_within_days: Type.Optional(keyListDays('expires within this many days from now, not yet expired')),
  idle_days: Type.Optional(keyListDays('not used for this many days: last used (or, never used, created) longer ago')),
  never_expires: Type.Optional(Type.Boolean({ description: 'true: keys without an expiry; false: keys with one' }))
}, { additionalProperties: false })
