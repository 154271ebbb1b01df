import { importJWK, type JWK, type JWSHeaderParameters } from 'jose'
import type { FastifyBaseLogger } from 'fastify'
import { ACCESS_TOKEN_ALGORITHMS } from '../../common/access-token-profile.js'
import type { IdentityClient } from './identity-client.js'

type ImportedKey = Awaited<ReturnType<typeof importJWK>>
interface PublishedKey { key: ImportedKey, alg: string }

export interface JwksCacheOptions {
  identity: Pick<IdentityClient, 'jwks'>
  /** Least time between two fetches caused by unknown `kid`s: a flood of forged kids costs identity one call per period. */
  cooldownMs: number
  log: FastifyBaseLogger
  now?: () => number
}

/**
 * Identity's public keys, kept in memory. Tokens are verified locally; identity is
 * asked again only when a token names a `kid` we do not know (a rotation), at most
 * once per cooldown, or when identity announces a rotation. If identity is down the
 * keys we have keep working: there is no expiry on a cached key, because identity
 * publishes a retired key until every token it signed has expired anyway.
 */
export function createJwksCache (options: JwksCacheOptions) {
  const now = options.now ?? Date.now
  let keys = new Map<string, PublishedKey>()
  let lastAttempt = Number.NEGATIVE_INFINITY
  let loaded = false
  let pending: Promise<void> | null = null

  async function fetchKeys (): Promise<void> {
    lastAttempt = now()
    const jwks = await options.identity.jwks()
    const next = new Map<string, PublishedKey>()
    for (const jwk of jwks.keys as JWK[]) {
      // A key without kid or alg cannot be pinned: it is ignored, not trusted.
      if (typeof jwk.kid !== 'string' || typeof jwk.alg !== 'string' || !(ACCESS_TOKEN_ALGORITHMS as readonly string[]).includes(jwk.alg)) continue
      try {
        next.set(jwk.kid, { key: await importJWK(jwk, jwk.alg), alg: jwk.alg })
      } catch (err) {
        options.log.warn({ err, kid: jwk.kid }, 'ignored a JWKS key that does not import')
      }
    }
    keys = next
    loaded = true
  }

  /** One fetch at a time; failures are logged and the keys we had are kept. */
  async function refresh (): Promise<void> {
    pending ??= fetchKeys()
      .catch((err: unknown) => { options.log.warn({ err }, 'JWKS refresh failed; keeping the keys we have') })
      .finally(() => { pending = null })
    await pending
  }

  return {
    refresh,
    get loaded (): boolean { return loaded },
    /**
     * jose's key resolver: the key for the token's `kid`, pinned to the algorithm it
     * was published with. Unknown kid: one rate-limited refresh, then refusal.
     */
    async resolve (header: JWSHeaderParameters): Promise<ImportedKey> {
      const kid = header.kid
      if (typeof kid !== 'string') throw new Error('token has no kid')
      let found = keys.get(kid)
      // A fetch already under way (another request's, or an event's) may bring this kid:
      // wait for it rather than refuse the first uses of a new key during the cooldown.
      if (found === undefined && (pending !== null || now() - lastAttempt >= options.cooldownMs)) {
        await refresh()
        found = keys.get(kid)
      }
      if (found === undefined) throw new Error('token signed by an unknown key')
      if (found.alg !== header.alg) throw new Error('token algorithm does not match its key')
      return found.key
    }
  }
}

export type JwksCache = ReturnType<typeof createJwksCache>
