import type { IncomingHttpHeaders } from 'node:http'
import type { GrantedPolicy } from '../../common/traffic/policy.js'
import { lookupIdOf } from '../../common/api-key-format.js'
import type { AccessPrincipal } from '../../common/logger.js'
import { readCredential } from '../../common/credentials.js'
import { AuthDetails, AuthProblems } from '../../common/problem.js'
import { GatewayDetails, GatewayProblems, INVALID_API_KEY_DETAILS } from '../errors.js'
import type { GatewayMetrics } from '../observability/metrics.js'
import type { TraceParent } from '../../common/tracing/tracing.js'
import type { AccessTokenClaims } from '../../common/access-token-profile.js'
import type { AccessTokenVerifier, TokenCheck } from './access-token-verifier.js'
import type { ApiKeyVerifier, KeyCheck } from './api-key-verifier.js'
import { IdentityUnreachableError } from './identity-client.js'

/**
 * Who is calling, once authenticated: forwarded upstream as x-portier-principal /
 * -permissions. Built once per verified credential (the cached verification), never
 * per request, with what every request of it needs ready.
 */
export interface Principal {
  kind: 'key' | 'user'
  id: string
  permissions: readonly string[]
  /** The same permissions, for the route's check (routing/permission-check.ts). */
  permissionSet: ReadonlySet<string>
  /** What the upstream is told of it: x-portier-principal, -principal-type, -permissions, as name, value, name, value. */
  forwardedHeaders: readonly string[]
  /** What every answer to it carries (Deprecation and Sunset while an old secret is used), as name, value pairs. */
  answerHeaders: readonly string[]
  /** Set when a key's old secret was used during a rotation grace period. */
  deprecation: { deprecatedAt: number, sunsetAt: number } | null
  /** For a key, the lookup id of the secret presented (uses are counted per secret); null for a user. */
  secretLookupId: string | null
  /** Whose per-user policies apply: the token's user, or the key's owner; null for a key that belongs to no user. */
  user: string | null
  /** Traffic policies that came with the credential: a key's own and its owner's roles', or the user's roles'. */
  policies: readonly GrantedPolicy[]
  /** The instant (epoch ms) past which the credential is no longer taken as it is now: a key's expiry, sunset or cache life, a token's expiry. */
  validUntil: number
  /** Who the access line names: made once here, not per request. */
  accessPrincipal: AccessPrincipal
}

type PrincipalFacts = Pick<Principal, 'kind' | 'id' | 'permissions' | 'deprecation' | 'secretLookupId' | 'user' | 'policies' | 'validUntil'>

/** A principal with its permission set and its headers made once. */
function principalOf (facts: PrincipalFacts): Principal {
  const { deprecation } = facts
  return Object.freeze({
    ...facts,
    permissionSet: new Set(facts.permissions),
    accessPrincipal: Object.freeze({ type: facts.kind === 'key' ? 'api_key' : 'user', id: facts.id } as const),
    forwardedHeaders: Object.freeze(['x-portier-principal', facts.id, 'x-portier-principal-type', facts.kind, 'x-portier-permissions', facts.permissions.join(',')]),
    // RFC 9745 (Deprecation, a structured-field date) and RFC 8594 (Sunset, an HTTP-date).
    answerHeaders: Object.freeze(deprecation === null
      ? []
      : ['deprecation', `@${Math.floor(deprecation.deprecatedAt / 1000)}`, 'sunset', new Date(deprecation.sunsetAt).toUTCString()])
  })
}

/**
 * Reads the one credential a request may carry and verifies it. Throws the problem
 * to answer with: 400 for both at once, 401 for none or a bad one (with the RFC 6750
 * challenge), 503 when an uncached key cannot be checked because identity is down.
 * Never fails open.
 */
export function createAuthenticator (deps: { keys: ApiKeyVerifier, tokens: AccessTokenVerifier, metrics: GatewayMetrics }) {
  const { keys, tokens, metrics } = deps
  const outcome = (credential: string, result: string) => metrics.authOutcomes.series({ credential, outcome: result })
  const counts = {
    keyValid: outcome('api_key', 'valid'),
    keyUnavailable: outcome('api_key', 'identity_unavailable'),
    bearerValid: outcome('bearer', 'valid'),
    bearerInvalid: outcome('bearer', 'invalid'),
    conflict: outcome('both', 'conflict'),
    malformedBearer: outcome('bearer', 'malformed'),
    missing: outcome('none', 'missing')
  }

  // Keyed by the cached verifications (one per presented key, one per token), so a principal is built once per credential.
  const keyPrincipals = new WeakMap<KeyCheck, Principal>()
  const userPrincipals = new WeakMap<AccessTokenClaims, Principal>()

  function principalOfKey (check: KeyCheck, presented: string): Principal {
    if (!check.valid) {
      metrics.authOutcomes.series({ credential: 'api_key', outcome: check.reason }).inc()
      throw GatewayProblems.invalidApiKey([INVALID_API_KEY_DETAILS[check.reason]])
    }
    counts.keyValid.inc()
    let principal = keyPrincipals.get(check)
    if (principal === undefined) {
      const { key } = check
      principal = principalOf({ kind: 'key', id: key.id, permissions: key.permissions, deprecation: key.deprecation, secretLookupId: lookupIdOf(presented), user: key.owner, policies: key.policies, validUntil: key.until })
      keyPrincipals.set(check, principal)
    }
    return principal
  }

  function identityUnavailable (err: unknown): never {
    if (err instanceof IdentityUnreachableError) {
      counts.keyUnavailable.inc()
      throw GatewayProblems.identityUnavailable()
    }
    throw err
  }

  function principalOfToken (check: TokenCheck): Principal {
    if (!check.valid) {
      counts.bearerInvalid.inc()
      throw AuthProblems.invalidToken([check.reason])
    }
    counts.bearerValid.inc()
    const { claims } = check
    let principal = userPrincipals.get(claims)
    if (principal === undefined) {
      principal = principalOf({ kind: 'user', id: claims.sub, permissions: claims.permissions, deprecation: null, secretLookupId: null, user: claims.sub, policies: claims.policies, validUntil: claims.exp * 1000 })
      userPrincipals.set(claims, principal)
    }
    return principal
  }

  /**
   * The principal at once when its credential was verified before (a cached key or
   * token); a promise when identity or the signing keys must be asked. Refusals are
   * thrown (or rejected) as the problems to answer with. `parent`, when the request is
   * traced, is the span identity's key check joins.
   */
  return function authenticate (headers: IncomingHttpHeaders, parent?: TraceParent): Principal | Promise<Principal> {
    const credential = readCredential(headers)
    switch (credential.kind) {
      case 'api_key': {
        const { key } = credential
        const check = keys.verify(key, parent)
        return check instanceof Promise ? check.then((verified) => principalOfKey(verified, key), identityUnavailable) : principalOfKey(check, key)
      }
      case 'bearer': {
        const check = tokens.verify(credential.token)
        return check instanceof Promise ? check.then(principalOfToken) : principalOfToken(check)
      }
      case 'conflicting':
        counts.conflict.inc()
        throw GatewayProblems.conflictingCredentials()
      case 'malformed_bearer':
        counts.malformedBearer.inc()
        throw AuthProblems.invalidToken([AuthDetails.malformedBearer])
      case 'none':
        counts.missing.inc()
        throw AuthProblems.credentialsMissing([GatewayDetails.credentialsMissing])
    }
  }
}

export type Authenticate = ReturnType<typeof createAuthenticator>
