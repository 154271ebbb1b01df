import { jwtVerify, errors as joseErrors } from 'jose'
import { LRUCache } from 'lru-cache'
import { ACCEPTED_ALGORITHMS, type JwksCache } from './jwks-cache.js'
import type { Rejection, TokenRevocations } from './token-revocations.js'

/** What identity's access tokens assert, once verified. */
export interface AccessTokenClaims {
  userId: string
  sessionId: string
  permissions: string[]
  issuedAt: number
  expiresAt: number
}

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

const REJECTION_REASONS: Record<Rejection, string> = {
  session_revoked: 'The session of this token has been revoked.',
  permissions_changed: 'The permissions of this user changed after the token was issued; refresh it.'
}

/**
 * Verifies access tokens locally (jose): signature with identity's published key for
 * the token's `kid`, the algorithm pinned to that key, `typ: at+jwt`, issuer,
 * audience, expiry and `nbf`. A token already verified is remembered until it
 * expires, so a client's repeated requests cost a map lookup rather than a
 * signature check; revocation is checked on every request all the same.
 */
export function createAccessTokenVerifier (options: AccessTokenVerifierOptions) {
  const now = options.now ?? Date.now
  const verified = new LRUCache<string, AccessTokenClaims>({ max: options.cacheMaxEntries })

  async function verifySignature (token: string): Promise<AccessTokenClaims | string> {
    try {
      const { payload } = await jwtVerify(token, async (header) => await options.jwks.resolve(header), {
        issuer: options.issuer,
        audience: options.audience,
        algorithms: [...ACCEPTED_ALGORITHMS],
        typ: 'at+jwt',
        requiredClaims: ['sub', 'sid', 'exp', 'iat', 'jti'],
        currentDate: new Date(now())
      })
      const permissions = payload.permissions
      if (typeof payload.sid !== 'string' || typeof payload.sub !== 'string' ||
        !Array.isArray(permissions) || !permissions.every((p) => typeof p === 'string')) {
        return 'The access token lacks its session or permission claims.'
      }
      return { userId: payload.sub, sessionId: payload.sid, permissions, issuedAt: payload.iat as number, expiresAt: (payload.exp as number) * 1000 }
    } catch (err) {
      if (err instanceof joseErrors.JWTExpired) return 'The access token has expired.'
      return 'The access token is invalid.'
    }
  }

  return {
    async verify (token: string): Promise<TokenCheck> {
      let claims = verified.get(token)
      if (claims === undefined) {
        const result = await verifySignature(token)
        if (typeof result === 'string') return { valid: false, reason: result }
        claims = result
        verified.set(token, claims, { ttl: Math.max(1, claims.expiresAt - now()) })
      } else if (claims.expiresAt <= now()) {
        verified.delete(token)
        return { valid: false, reason: 'The access token has expired.' }
      }
      const rejection = options.revocations.check(claims.sessionId, claims.userId, claims.issuedAt)
      return rejection === null ? { valid: true, claims } : { valid: false, reason: REJECTION_REASONS[rejection] }
    }
  }
}

export type AccessTokenVerifier = ReturnType<typeof createAccessTokenVerifier>
