import { SignJWT, decodeProtectedHeader, errors as joseErrors, jwtVerify } from 'jose'
import { randomBase62 } from '../../common/random.js'
import { IdentityProblems } from '../errors.js'
import type { Clock } from './clock.js'
import type { SigningKeys } from './signing-keys.js'

/** RFC 9068 media type of JWT access tokens, carried in the `typ` header. */
export const ACCESS_TOKEN_TYP = 'at+jwt'
/** RFC 9068 requires client_id; first-party logins all come from this one client. */
const CLIENT_ID = 'portier'

export interface AccessTokenClaims {
  sub: string
  sid: string
  jti: string
  iat: number
  exp: number
  permissions: string[]
}

export interface AccessTokensOptions {
  signingKeys: SigningKeys
  clock: Clock
  issuer: string
  audience: string
  ttlSeconds: number
}

export type AccessTokens = ReturnType<typeof createAccessTokens>

/** Issues access tokens and verifies the ones this identity signed. */
export function createAccessTokens (options: AccessTokensOptions) {
  const { signingKeys, clock, issuer, audience, ttlSeconds } = options

  return {
    async issue (subject: { userId: string, sessionId: string, permissions: string[] }): Promise<string> {
      const { kid, alg, key } = await signingKeys.active()
      const iat = Math.floor(clock.now() / 1000)
      return await new SignJWT({ sid: subject.sessionId, permissions: subject.permissions, client_id: CLIENT_ID })
        .setProtectedHeader({ alg, kid, typ: ACCESS_TOKEN_TYP })
        .setIssuer(issuer)
        .setAudience(audience)
        .setSubject(subject.userId)
        .setIssuedAt(iat)
        .setExpirationTime(iat + ttlSeconds)
        .setJti(randomBase62(22))
        .sign(key)
    },

    /**
     * Verifies a token this identity signed: signature with the key its `kid` names
     * and only that key's algorithm, `typ`, issuer and audience. `toleratedExpirySeconds`
     * lets /tokens accept an access token that expired shortly before the refresh.
     * Failures become `invalid_token` problems here, at the one jose boundary.
     */
    async verify (token: string, toleratedExpirySeconds = 0): Promise<AccessTokenClaims> {
      try {
        const header = decodeProtectedHeader(token)
        const found = typeof header.kid === 'string' ? await signingKeys.publicKey(header.kid) : null
        if (found === null) throw IdentityProblems.invalidToken(['The token was not signed by this identity.'])
        const { payload } = await jwtVerify(token, found.key, {
          algorithms: [found.alg],
          issuer,
          audience,
          typ: ACCESS_TOKEN_TYP,
          currentDate: new Date(clock.now()),
          clockTolerance: toleratedExpirySeconds,
          requiredClaims: ['sub', 'sid', 'exp', 'iat', 'jti']
        })
        if (typeof payload.sid !== 'string' || typeof payload.sub !== 'string' || typeof payload.jti !== 'string') {
          throw IdentityProblems.invalidToken(['The token lacks its session claims.'])
        }
        return {
          sub: payload.sub,
          sid: payload.sid,
          jti: payload.jti,
          iat: payload.iat as number,
          exp: payload.exp as number,
          permissions: Array.isArray(payload.permissions) ? payload.permissions.filter((p): p is string => typeof p === 'string') : []
        }
      } catch (err) {
        throw translateJoseError(err)
      }
    }
  }
}

function translateJoseError (err: unknown): Error {
  if (err instanceof joseErrors.JWTExpired) return IdentityProblems.invalidToken(['The access token has expired.'])
  if (err instanceof joseErrors.JOSEError) return IdentityProblems.invalidToken(['The access token is invalid.'])
  if (err instanceof Error && 'title' in err) return err // already one of ours
  return IdentityProblems.invalidToken(['The access token is malformed.'])
}
