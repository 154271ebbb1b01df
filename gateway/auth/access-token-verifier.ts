import { jwtVerify, errors as joseErrors } from 'jose'
import { LRUCache } from 'lru-cache'
import {
  ACCESS_TOKEN_ALGORITHMS, accessTokenVerifyOptions, readAccessTokenClaims, type AccessTokenClaims
} from '../../common/access-token-profile.js'
import { AuthDetails } from '../../common/problem.js'
import { GatewayDetails } from '../errors.js'
import type { JwksCache } from './jwks-cache.js'
import type { Rejection, TokenRevocations } from './token-revocations.js'

/** Valid, with its claims, or refused, with the detail of the `invalid_token` problem. */
export type TokenCheck =
  | { valid: true, claims: AccessTokenClaims }
  | { valid: false, reason: string }

export interface AccessTokenVerifierOptions {
  jwks: JwksCache
  revocations: TokenRevocations
  issuer: string
  audience: string
  cacheMaxEntries: number
  now?: () => number
}

const REJECTION_DETAILS = {
  session_revoked: GatewayDetails.sessionRevoked,
  permissions_changed: GatewayDetails.permissionsChanged
} as const satisfies Record<Rejection, string>

/**
 * Verifies access tokens locally (jose) as the profile says (common/access-token-profile.ts):
 * signature with identity's published key for the token's `kid`, the algorithm pinned
 * to that key, `typ: at+jwt`, issuer, audience, expiry and `nbf`. A token already
 * verified is remembered until it expires, so a client's repeated requests cost a map
 * lookup rather than a signature check; revocation is checked on every request all the same.
 */
export function createAccessTokenVerifier (options: AccessTokenVerifierOptions) {
  const now = options.now ?? Date.now
  const verified = new LRUCache<string, AccessTokenClaims>({ max: options.cacheMaxEntries })

  async function verifySignature (token: string): Promise<AccessTokenClaims | string> {
    try {
      const { payload } = await jwtVerify(token, async (header) => await options.jwks.resolve(header),
        accessTokenVerifyOptions({ issuer: options.issuer, audience: options.audience, algorithms: ACCESS_TOKEN_ALGORITHMS, now: now() }))
      return readAccessTokenClaims(payload) ?? AuthDetails.tokenClaimsMissing
    } catch (err) {
      if (err instanceof joseErrors.JWTExpired) return AuthDetails.tokenExpired
      return AuthDetails.tokenInvalid
    }
  }

  function checkRevocation (claims: AccessTokenClaims): TokenCheck {
    const rejection = options.revocations.check(claims.sid, claims.sub, claims.iat)
    return rejection === null ? { valid: true, claims } : { valid: false, reason: REJECTION_DETAILS[rejection] }
  }

  async function verifyFirst (token: string): Promise<TokenCheck> {
    const result = await verifySignature(token)
    if (typeof result === 'string') return { valid: false, reason: result }
    verified.set(token, result, { ttl: Math.max(1, result.exp * 1000 - now()) })
    return checkRevocation(result)
  }

  return {
    /** At once for a token verified before (revocation still checked); a promise while its signature is checked. */
    verify (token: string): TokenCheck | Promise<TokenCheck> {
      const claims = verified.get(token)
      if (claims === undefined) return verifyFirst(token)
      if (claims.exp * 1000 <= now()) {
        verified.delete(token)
        return { valid: false, reason: AuthDetails.tokenExpired }
      }
      return checkRevocation(claims)
    }
  }
}

export type AccessTokenVerifier = ReturnType<typeof createAccessTokenVerifier>
