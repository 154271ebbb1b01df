import { createHmac } from 'node:crypto'
import { LRUCache } from 'lru-cache'
import { parseApiKey } from '../../common/api-key-format.js'
import type { KeyInvalidReason } from '../../common/internal-api.js'
import type { IdentityClient, KeyVerdict } from './identity-client.js'
import type { GatewayMetrics } from '../observability/metrics.js'
import type { TraceParent } from '../../common/tracing/tracing.js'
import type { KeyCacheL2, VerifiedKey } from './key-cache-l2.js'

export type { VerifiedKey } from './key-cache-l2.js'

export interface ValidKeyCheck { valid: true, key: VerifiedKey }
export interface InvalidKeyCheck { valid: false, reason: KeyInvalidReason }
export type KeyCheck = ValidKeyCheck | InvalidKeyCheck

const MALFORMED: InvalidKeyCheck = Object.freeze({ valid: false, reason: 'malformed' })

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
 * L1 (in-process LRU with TTL) → checksum without I/O → L2 (Redis) → identity.
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
  // L1 is keyed by the key as presented, in this process only: a hit costs one map
  // lookup, with no hash computed. Its value is the answer itself, shared by every hit.
  // An entry keeps its own end (L1's TTL, on the monotonic clock; the key's own `until`
  // on the verifier's): the LRU keeps no timestamps of its own for a hit to read.
  const positive = new LRUCache<string, { check: ValidKeyCheck, freshUntil: number }>({
    max: options.l1MaxEntries,
    dispose: (entry, presented) => { unindex(entry.check.key.id, presented) }
  })
  const negative = new LRUCache<string, InvalidKeyCheck>({ max: options.l1MaxEntries, ttl: options.negativeTtlMs })
  const inFlight = new Map<string, Promise<KeyCheck>>()
  const counts = {
    l1Hit: metrics.keyCache.series({ tier: 'l1', result: 'hit' }),
    l1NegativeHit: metrics.keyCache.series({ tier: 'l1', result: 'negative_hit' }),
    l1Miss: metrics.keyCache.series({ tier: 'l1', result: 'miss' }),
    l2Hit: metrics.keyCache.series({ tier: 'l2', result: 'hit' }),
    l2Miss: metrics.keyCache.series({ tier: 'l2', result: 'miss' }),
    identityValid: metrics.keyCache.series({ tier: 'identity', result: 'valid' }),
    identityInvalid: metrics.keyCache.series({ tier: 'identity', result: 'invalid' })
  }
  /** Bumped by every eviction; a miss that started before one must not write its result. */
  let evictions = 0
  const evictedAt = new LRUCache<string, number>({ max: 100_000 })

  function unindex (keyId: string, presented: string): void {
    const set = keyIndex.get(keyId)
    if (set === undefined) return
    set.delete(presented)
    if (set.size === 0) keyIndex.delete(keyId)
  }

  /** The key's name in L2: no raw key, and no unsalted hash of one, ever reaches Redis. */
  function l2KeyOf (presented: string): string {
    return createHmac('sha256', options.hmacKey).update(presented).digest('base64url')
  }

  function remember (presented: string, key: VerifiedKey): void {
    if (key.until <= now()) return
    positive.set(presented, { check: { valid: true, key }, freshUntil: performance.now() + options.l1TtlMs })
    let set = keyIndex.get(key.id)
    if (set === undefined) keyIndex.set(key.id, set = new Set())
    set.add(presented)
  }

  function fromVerdict (verdict: KeyVerdict & { valid: true }): VerifiedKey {
    const bounds = [now() + options.l2TtlMs]
    if (verdict.key.expires_at !== null) bounds.push(Date.parse(verdict.key.expires_at))
    const deprecation = verdict.deprecation === null
      ? null
      : { deprecatedAt: Date.parse(verdict.deprecation.deprecated_at), sunsetAt: Date.parse(verdict.deprecation.sunset_at) }
    if (deprecation !== null) bounds.push(deprecation.sunsetAt)
    return {
      id: verdict.key.id,
      permissions: verdict.key.permissions,
      deprecation,
      owner: verdict.key.owner_user_id ?? null,
      policies: verdict.key.policies ?? [],
      until: Math.min(...bounds)
    }
  }

  async function miss (presented: string, parent: TraceParent | undefined): Promise<KeyCheck> {
    const cacheKey = l2KeyOf(presented)
    const startedAt = evictions
    // evictedAt holds the count once that eviction finished (Infinity while it runs): equal to startedAt means it finished before this miss.
    const unchangedSinceStart = (keyId: string): boolean => (evictedAt.get(keyId) ?? -1) <= startedAt
    const cached = await l2.read(cacheKey)
    if (cached !== null && unchangedSinceStart(cached.id)) {
      counts.l2Hit.inc()
      remember(presented, cached)
      return { valid: true, key: cached }
    }
    counts.l2Miss.inc()
    const verdict = await identity.verifyKey(presented, parent)
    ;(verdict.valid ? counts.identityValid : counts.identityInvalid).inc()
    if (!verdict.valid) {
      const refused: InvalidKeyCheck = { valid: false, reason: verdict.reason }
      // A refusal heard during an eviction may predate an enable: do not remember it.
      if (evictions === startedAt) negative.set(presented, refused)
      return refused
    }
    const key = fromVerdict(verdict)
    if (unchangedSinceStart(key.id)) {
      remember(presented, key)
      await l2.write(cacheKey, key, () => unchangedSinceStart(key.id))
    }
    return { valid: true, key }
  }

  return {
    /**
     * The answer at once when L1 holds it (a key seen recently, or a malformed one);
     * otherwise a promise, which rejects with IdentityUnreachableError when the key is
     * in no cache and identity cannot be asked. A hit does no work a request could
     * avoid: no promise, no hash, no allocation. `parent`: the traced request's span
     * that identity's check joins (concurrent misses share the first one's call).
     */
    verify (presented: string, parent?: TraceParent): KeyCheck | Promise<KeyCheck> {
      const hit = positive.get(presented)
      if (hit !== undefined) {
        if (hit.freshUntil > performance.now() && hit.check.key.until > now()) {
          counts.l1Hit.inc()
          return hit.check
        }
        positive.delete(presented)
      }
      if (parseApiKey(presented) === null) return MALFORMED
      const refused = negative.get(presented)
      if (refused !== undefined) {
        counts.l1NegativeHit.inc()
        return refused
      }
      counts.l1Miss.inc()
      let pending = inFlight.get(presented)
      if (pending === undefined) {
        pending = miss(presented, parent).finally(() => inFlight.delete(presented))
        inFlight.set(presented, pending)
      }
      return pending
    },

    /** Forgets every cached verification of one key, in this process and in Redis. */
    async evict (keyId: string): Promise<void> {
      evictions++
      // Until L2 is clean too, no miss may trust what it read, whenever it began.
      evictedAt.set(keyId, Number.POSITIVE_INFINITY)
      // Entries this process wrote are deleted by name too: one written just after another gateway's eviction read the index is in no index.
      const presentedKeys = [...keyIndex.get(keyId) ?? []]
      for (const presented of presentedKeys) positive.delete(presented)
      const written = presentedKeys.map(l2KeyOf)
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
