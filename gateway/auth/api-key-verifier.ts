import { createHmac } from 'node:crypto'
import { LRUCache } from 'lru-cache'
import { parseApiKey } from '../../common/api-key-format.js'
import type { KeyInvalidReason } from '../../common/internal-api.js'
import type { IdentityClient, KeyVerdict } from './identity-client.js'
import type { GatewayMetrics } from '../observability/metrics.js'
import type { KeyCacheL2, VerifiedKey } from './key-cache-l2.js'

export type { VerifiedKey } from './key-cache-l2.js'

export type KeyCheck =
  | { valid: true, key: VerifiedKey }
  | { valid: false, reason: KeyInvalidReason }

export interface ApiKeyVerifierOptions {
  identity: Pick<IdentityClient, 'verifyKey'>
  /** Shared by the replicas (Redis), or none: the verifier neither opens nor closes it. */
  l2: KeyCacheL2
  /** Secret for the cache keys: no raw key, and no unsalted hash of one, ever reaches Redis. */
  hmacKey: Buffer
  l1MaxEntries: number
  l1TtlMs: number
  /** Bounds how long any tier trusts a verification, whatever the key's own expiry. */
  l2TtlMs: number
  negativeTtlMs: number
  metrics: Pick<GatewayMetrics, 'keyCache'>
  now?: () => number
}

/**
 * API key verification behind two cache tiers, cheapest first:
 * checksum without I/O → L1 (in-process LRU with TTL) → L2 (Redis) → identity.
 * Concurrent misses for one key share one identity call. Refusals are cached in L1
 * only, briefly: enough to absorb a flood of the same bad key, short enough that a
 * re-enabled key works again quickly. Entries are evicted by key id when identity
 * announces a change; a verification that was in flight during an eviction is not
 * cached, so a revoked key cannot come back through a race.
 * L2, and why any failure of it sets it aside, is in key-cache-l2.ts.
 */
export function createApiKeyVerifier (options: ApiKeyVerifierOptions) {
  const { identity, l2, metrics } = options
  const now = options.now ?? Date.now
  const keyIndex = new Map<string, Set<string>>()
  const positive = new LRUCache<string, VerifiedKey>({
    max: options.l1MaxEntries,
    ttl: options.l1TtlMs,
    dispose: (entry, cacheKey) => { unindex(entry.id, cacheKey) }
  })
  const negative = new LRUCache<string, KeyInvalidReason>({ max: options.l1MaxEntries, ttl: options.negativeTtlMs })
  const inFlight = new Map<string, Promise<KeyCheck>>()
  /** Bumped by every eviction; a miss that started before one must not write its result. */
  let evictions = 0
  const evictedAt = new LRUCache<string, number>({ max: 100_000 })

  function unindex (keyId: string, cacheKey: string): void {
    const set = keyIndex.get(keyId)
    if (set === undefined) return
    set.delete(cacheKey)
    if (set.size === 0) keyIndex.delete(keyId)
  }

  function cacheKeyOf (presented: string): string {
    return createHmac('sha256', options.hmacKey).update(presented).digest('base64url')
  }

  function remember (cacheKey: string, key: VerifiedKey): void {
    const ttl = Math.min(options.l1TtlMs, key.until - now())
    if (ttl <= 0) return
    positive.set(cacheKey, key, { ttl })
    let set = keyIndex.get(key.id)
    if (set === undefined) keyIndex.set(key.id, set = new Set())
    set.add(cacheKey)
  }

  function fromVerdict (verdict: KeyVerdict & { valid: true }): VerifiedKey {
    const bounds = [now() + options.l2TtlMs]
    if (verdict.key.expires_at !== null) bounds.push(Date.parse(verdict.key.expires_at))
    const deprecation = verdict.deprecation === null
      ? null
      : { deprecatedAt: Date.parse(verdict.deprecation.deprecated_at), sunsetAt: Date.parse(verdict.deprecation.sunset_at) }
    if (deprecation !== null) bounds.push(deprecation.sunsetAt)
    return { id: verdict.key.id, permissions: verdict.key.permissions, deprecation, until: Math.min(...bounds) }
  }

  async function miss (presented: string, cacheKey: string): Promise<KeyCheck> {
    const startedAt = evictions
    // evictedAt holds the count once that eviction finished (Infinity while it runs): equal to startedAt means it finished before this miss.
    const unchangedSinceStart = (keyId: string): boolean => (evictedAt.get(keyId) ?? -1) <= startedAt
    const cached = await l2.read(cacheKey)
    if (cached !== null && unchangedSinceStart(cached.id)) {
      metrics.keyCache.inc({ tier: 'l2', result: 'hit' })
      remember(cacheKey, cached)
      return { valid: true, key: cached }
    }
    metrics.keyCache.inc({ tier: 'l2', result: 'miss' })
    const verdict = await identity.verifyKey(presented)
    metrics.keyCache.inc({ tier: 'identity', result: verdict.valid ? 'valid' : 'invalid' })
    if (!verdict.valid) {
      // A refusal heard during an eviction may predate an enable: do not remember it.
      if (evictions === startedAt) negative.set(cacheKey, verdict.reason)
      return { valid: false, reason: verdict.reason }
    }
    const key = fromVerdict(verdict)
    if (unchangedSinceStart(key.id)) {
      remember(cacheKey, key)
      await l2.write(cacheKey, key, () => unchangedSinceStart(key.id))
    }
    return { valid: true, key }
  }

  return {
    /** Throws IdentityUnreachableError when the key is in no cache and identity cannot be asked. */
    async verify (presented: string): Promise<KeyCheck> {
      if (parseApiKey(presented) === null) return { valid: false, reason: 'malformed' }
      const cacheKey = cacheKeyOf(presented)
      const hit = positive.get(cacheKey)
      if (hit !== undefined && hit.until > now()) {
        metrics.keyCache.inc({ tier: 'l1', result: 'hit' })
        return { valid: true, key: hit }
      }
      const refused = negative.get(cacheKey)
      if (refused !== undefined) {
        metrics.keyCache.inc({ tier: 'l1', result: 'negative_hit' })
        return { valid: false, reason: refused }
      }
      metrics.keyCache.inc({ tier: 'l1', result: 'miss' })
      let pending = inFlight.get(cacheKey)
      if (pending === undefined) {
        pending = miss(presented, cacheKey).finally(() => inFlight.delete(cacheKey))
        inFlight.set(cacheKey, pending)
      }
      return await pending
    },

    /** Forgets every cached verification of one key, in this process and in Redis. */
    async evict (keyId: string): Promise<void> {
      evictions++
      // Until L2 is clean too, no miss may trust what it read, whenever it began.
      evictedAt.set(keyId, Number.POSITIVE_INFINITY)
      // Entries this process wrote are deleted by name too: one written just after another gateway's eviction read the index is in no index.
      const written = [...keyIndex.get(keyId) ?? []]
      for (const cacheKey of written) positive.delete(cacheKey)
      // A re-enabled or re-permitted key must not stay refused for the negative TTL.
      negative.clear()
      await l2.evict(keyId, written)
      // Counted again once L2 is clean: a miss that began while the deletes ran may have read the stale entry.
      evictions++
      evictedAt.set(keyId, evictions)
    },

    get l1Size (): number { return positive.size }
  }
}

export type ApiKeyVerifier = ReturnType<typeof createApiKeyVerifier>
