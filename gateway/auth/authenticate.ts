import type { IncomingHttpHeaders } from 'node:http'
import { lookupIdOf } from '../../common/api-key-format.js'
import { readCredential } from '../../common/credentials.js'
import { AuthDetails, AuthProblems, bearerChallenge } from '../../common/problem.js'
import { GatewayDetails, GatewayProblems, INVALID_API_KEY_DETAILS } from '../errors.js'
import type { GatewayMetrics } from '../observability/metrics.js'
import type { AccessTokenVerifier } from './access-token-verifier.js'
import type { ApiKeyVerifier } from './api-key-verifier.js'
import { IdentityUnreachableError } from './identity-client.js'

/** Who is calling, once authenticated: forwarded upstream as x-portier-principal / -permissions. */
export interface Principal {
  kind: 'key' | 'user'
  id: string
  permissions: readonly string[]
  /** Set when a key's old secret was used during a rotation grace period. */
  deprecation: { deprecatedAt: number, sunsetAt: number } | null
  /** For a key, the lookup id of the secret presented (uses are counted per secret); null for a user. */
  secretLookupId: string | null
}

/**
 * Reads the one credential a request may carry and verifies it. Throws the problem
 * to answer with: 400 for both at once, 401 for none or a bad one (with the RFC 6750
 * challenge), 503 when an uncached key cannot be checked because identity is down.
 * Never fails open.
 */
export function createAuthenticator (deps: { keys: ApiKeyVerifier, tokens: AccessTokenVerifier, metrics: GatewayMetrics }) {
  const { keys, tokens, metrics } = deps

  async function byKey (presented: string): Promise<Principal> {
    let check
    try {
      check = await keys.verify(presented)
    } catch (err) {
      if (err instanceof IdentityUnreachableError) {
        metrics.authOutcomes.inc({ credential: 'api_key', outcome: 'identity_unavailable' })
        throw GatewayProblems.identityUnavailable()
      }
      throw err
    }
    if (!check.valid) {
      metrics.authOutcomes.inc({ credential: 'api_key', outcome: check.reason })
      throw GatewayProblems.invalidApiKey([INVALID_API_KEY_DETAILS[check.reason]])
    }
    metrics.authOutcomes.inc({ credential: 'api_key', outcome: 'valid' })
    return { kind: 'key', id: check.key.id, permissions: check.key.permissions, deprecation: check.key.deprecation, secretLookupId: lookupIdOf(presented) }
  }

  async function byToken (token: string): Promise<Principal> {
    const check = await tokens.verify(token)
    if (!check.valid) {
      metrics.authOutcomes.inc({ credential: 'bearer', outcome: 'invalid' })
      throw AuthProblems.invalidToken([check.reason])
    }
    metrics.authOutcomes.inc({ credential: 'bearer', outcome: 'valid' })
    return { kind: 'user', id: check.claims.sub, permissions: check.claims.permissions, deprecation: null, secretLookupId: null }
  }

  return async function authenticate (headers: IncomingHttpHeaders): Promise<Principal> {
    const credential = readCredential(headers)
    switch (credential.kind) {
      case 'api_key': return await byKey(credential.key)
      case 'bearer': return await byToken(credential.token)
      case 'conflicting':
        metrics.authOutcomes.inc({ credential: 'both', outcome: 'conflict' })
        throw GatewayProblems.conflictingCredentials()
      case 'malformed_bearer':
        metrics.authOutcomes.inc({ credential: 'bearer', outcome: 'malformed' })
        throw AuthProblems.invalidToken([AuthDetails.malformedBearer])
      case 'none':
        metrics.authOutcomes.inc({ credential: 'none', outcome: 'missing' })
        throw AuthProblems.credentialsMissing([GatewayDetails.credentialsMissing])
    }
  }
}

/** The 403 for a principal lacking `permission`; tokens also get RFC 6750's insufficient_scope. */
export function permissionDenied (principal: Principal, permission: string) {
  return GatewayProblems.permissionDenied([permission], {
    extensions: { missing_permission: permission },
    ...(principal.kind === 'user' ? { headers: { 'www-authenticate': bearerChallenge('insufficient_scope') } } : {})
  })
}

export type Authenticate = ReturnType<typeof createAuthenticator>
