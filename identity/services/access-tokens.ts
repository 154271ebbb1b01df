import { SignJWT, decodeProtectedHeader, errors as joseErrors, jwtVerify } from 'jose'
import {
  ACCESS_TOKEN_CLIENT_ID, ACCESS_TOKEN_TYP, accessTokenVerifyOptions, readAccessTokenClaims, type AccessTokenClaims
} from '../../common/access-token-profile.js'
import { AuthDetails } from '../../common/problem.js'
import { randomBase62 } from '../../common/random.js'
import { IdentityDetails, IdentityProblems } from '../errors.js'
import type { Clock } from './clock.js'
import type { SigningKeys } from './signing-keys.js'
import type { UserGrants } from './user-grants.js'

export interface AccessTokensOptions {
  signingKeys: SigningKeys
  clock: Clock
  issuer: string
  audience: string
  ttlSeconds: number
}

export type AccessTokens = ReturnType<typeof createAccessTokens>

/** Issues access tokens and verifies the ones this identity signed (common/access-token-profile.ts). */
export function createAccessTokens (options: AccessTokensOptions) {
  const { signingKeys, clock, issuer, audience, ttlSeconds } = options

  return {
    /** The token of a session, granting what the user's roles grant now. */
    async issue (subject: { userId: string, sessionId: string } & UserGrants): Promise<string> {
      const { kid, alg, key } = await signingKeys.active()
      const iat = Math.floor(clock.now() / 1000)
      const { policies, ...claims }: AccessTokenClaims = {
        sub: subject.userId, sid: subject.sessionId, jti: randomBase62(22), iat, exp: iat + ttlSeconds, permissions: subject.permissions, policies: subject.policies
      }
      // `tpol` only when there are policies: most tokens carry none, and stay as short as before.
      const payload = { ...claims, ...(policies.length > 0 ? { tpol: policies } : {}) }
      return await new SignJWT({ ...payload, iss: issuer, aud: audience, client_id: ACCESS_TOKEN_CLIENT_ID })
        .setProtectedHeader({ alg, kid, typ: ACCESS_TOKEN_TYP })
        .sign(key)
    },

    /**
     * Verifies a token this identity signed: signature with the key its `kid` names
     * and only that key's algorithm, then the profile's checks. `toleratedExpirySeconds`
     * lets /tokens accept an access token that expired shortly before the refresh.
     * Failures become `invalid_token` problems here, at the one jose boundary.
     */
    async verify (token: string, toleratedExpirySeconds = 0): Promise<AccessTokenClaims> {
      try {
        const header = decodeProtectedHeader(token)
        const found = typeof header.kid === 'string' ? await signingKeys.publicKey(header.kid) : null
        if (found === null) throw IdentityProblems.invalidToken([IdentityDetails.tokenNotOurs])
        const { payload } = await jwtVerify(token, found.key,
          accessTokenVerifyOptions({ issuer, audience, algorithms: [found.alg], now: clock.now(), toleratedExpirySeconds }))
        const claims = readAccessTokenClaims(payload)
        if (claims === null) throw IdentityProblems.invalidToken([AuthDetails.tokenClaimsMissing])
        return claims
      } catch (err) {
        throw translateJoseError(err)
      }
    }
  }
}

function translateJoseError (err: unknown): Error {
  if (err instanceof joseErrors.JWTExpired) return IdentityProblems.invalidToken([AuthDetails.tokenExpired])
  if (err instanceof joseErrors.JOSEError) return IdentityProblems.invalidToken([AuthDetails.tokenInvalid])
  if (err instanceof Error && 'title' in err) return err // already one of ours
  return IdentityProblems.invalidToken([IdentityDetails.tokenMalformed])
}
