import type { JWTPayload, JWTVerifyOptions } from 'jose'
import { Value } from 'typebox/value'
import { GrantedPolicies, type GrantedPolicy } from './traffic/policy.js'

/**
 * The access-token profile identity issues and the gateway verifies (RFC 9068 JWTs).
 * Both sides read it from here: what identity signs is exactly what the gateway
 * accepts, and a change to one is a change to both.
 */

/** RFC 9068 media type of JWT access tokens, carried in the `typ` header (jose also accepts `application/at+jwt`). */
export const ACCESS_TOKEN_TYP = 'at+jwt'

/** The algorithms identity signs with; the gateway refuses any other before looking for a key. */
export const ACCESS_TOKEN_ALGORITHMS = ['EdDSA', 'ES256'] as const
export type AccessTokenAlgorithm = typeof ACCESS_TOKEN_ALGORITHMS[number]

/**
 * Access tokens live 600 s (`expires_in: 600`), not an option: the gateway forgets a
 * revoked session once no token of it can still be alive, and identity keeps a
 * retired signing key published as long.
 */
export const ACCESS_TOKEN_TTL_SECONDS = 600

/** RFC 9068 requires client_id; first-party logins all come from this one client. */
export const ACCESS_TOKEN_CLIENT_ID = 'portier'

/** Claims every access token carries, checked present by jose before its claims are read. */
export const REQUIRED_CLAIMS = ['sub', 'sid', 'exp', 'iat', 'jti'] as const

/** What an access token asserts. Times in seconds since the epoch, as in the JWT. */
export interface AccessTokenClaims {
  /** The user's id. */
  sub: string
  /** The session's id: revoking it revokes the token. */
  sid: string
  jti: string
  iat: number
  exp: number
  /** Granted when the token was issued; checked with `permits` (common/permissions.ts). */
  permissions: string[]
  /** The traffic policies of the user's roles when the token was issued (claim `tpol`); empty when none. */
  policies: GrantedPolicy[]
}

export interface AccessTokenCheck {
  issuer: string
  audience: string
  /** The algorithms acceptable for this token: identity pins the one its key has. */
  algorithms: readonly string[]
  /** Milliseconds since the epoch. */
  now: number
  /** Seconds a token may be past `exp` and still pass (identity's refresh of a just-expired token). */
  toleratedExpirySeconds?: number
}

/** jose's verification options for an access token: `typ`, algorithm, issuer, audience, expiry and the required claims. */
export function accessTokenVerifyOptions (check: AccessTokenCheck): JWTVerifyOptions {
  return {
    issuer: check.issuer,
    audience: check.audience,
    algorithms: [...check.algorithms],
    typ: ACCESS_TOKEN_TYP,
    requiredClaims: [...REQUIRED_CLAIMS],
    currentDate: new Date(check.now),
    ...(check.toleratedExpirySeconds !== undefined ? { clockTolerance: check.toleratedExpirySeconds } : {})
  }
}

const isString = (value: unknown): value is string => typeof value === 'string'
const isTime = (value: unknown): value is number => typeof value === 'number' && Number.isFinite(value)

/**
 * The claims of a verified payload, or null when one is missing or of the wrong type
 * (a token signed by the right key but not as identity issues them).
 */
export function readAccessTokenClaims (payload: JWTPayload): AccessTokenClaims | null {
  const { sub, sid, jti, iat, exp, permissions, tpol } = payload
  if (!isString(sub) || !isString(sid) || !isString(jti) || !isTime(iat) || !isTime(exp)) return null
  if (!Array.isArray(permissions) || !permissions.every(isString)) return null
  if (tpol !== undefined && !Value.Check(GrantedPolicies, tpol)) return null
  return { sub, sid, jti, iat, exp, permissions, policies: (tpol ?? []) as GrantedPolicy[] }
}
