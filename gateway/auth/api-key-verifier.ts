import { createHmac } from 'node:crypto'
import { LRUCache } from 'lru-cache'
import type { Redis } from 'ioredis'
import type { FastifyBaseLogger } from 'fastify'
import { parseApiKey } from '../../common/api-key-format.js'
import type { IdentityClient, KeyVerdict } from './identity-client.js'
import type { GatewayMetrics } from '../observability/metrics.js'

/** A verified key, as the gateway keeps it in both cache tiers. */
export interface VerifiedKey {
  id: string
  permissions: string[]
  /** When the old secret of a rotation was presented: the client is told to switch. */
  deprecation: { deprecatedAt: number, sunsetAt: number } | null
  /** The entry must not be used after this instant (key expiry, sunset, or cache TTL). */
  until: number
}

export type KeyCheck =
  | { valid: true, key: VerifiedKey }
  | { valid: false, reason: string }

export interface ApiKeyVerifierOptions {
  identity: Pick<IdentityClient, 'verifyKey'>
  redis: Redis | null
  /** Secret for the cache keys: no raw key, and no unsalted hash of one, ever reaches Redis. */
  hmacKey: Buffer
  l1MaxEntries: number
  l1TtlMs: number
  l2TtlMs: number
  negativeTtlMs: number
  metrics: GatewayMetrics
  log: FastifyBaseLogger
  now?: () => number
}

const ENTRY_PREFIX = 'portier:key:'
const INDEX_PREFIX = 'portier:key-index:'

/**
 * API key verification behind two cache tiers (DESIGN "Gateway request path" §3):
 * checksum without I/O → L1 (in-process LRU with TTL) → L2 (Redis) → identity.
 * Concurrent misses for one key share one identity call. Refusals are cached in L1
 * only, briefly: enough to absorb a flood of the same bad key, short enough that a
 * re-enabled key works again quickly. Entries are evicted by key id when identity
 * announces a change; a verification that was in flight during an eviction is not
 * cached, so a revoked key cannot come back through a race.
 */
export function createApiKeyVerifier (options: ApiKeyVerifierOptions) {
  const { identity, redis, metrics, log } = options
  const now = options.now ?? Date.now
  const keyIndex = new Map<string, Set<string>>()
  const positive = new LRUCache<string, VerifiedKey>({
    max: options.l1MaxEntries,
    ttl: options.l1TtlMs,
    dispose: (entry, cacheKey) => { unindex(entry.id, cacheKey) }
  })
  const negative = new LRUCache<string, string>({ max: options.l1MaxEntries, ttl: options.negativeTtlMs })
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

  async function readL2 (cacheKey: string): Promise<VerifiedKey | null> {
    if (redis === null || redis.status !== 'ready') return null
    try {
      const raw = await redis.get(ENTRY_PREFIX + cacheKey)
      if (raw === null) return null
      const entry = JSON.parse(raw) as VerifiedKey
      return entry.until > now() ? entry : null
    } catch (err) {
      log.warn({ err }, 'key cache L2 read failed; asking identity')
      return null
    }
  }

  async function writeL2 (cacheKey: string, key: VerifiedKey): Promise<void> {
    const ttl = Math.floor(key.until - now())
    if (redis === null || redis.status !== 'ready' || ttl <= 0) return
    try {
      await redis.multi()
        .set(ENTRY_PREFIX + cacheKey, JSON.stringify(key), 'PX', ttl)
        .sadd(INDEX_PREFIX + key.id, cacheKey)
        .pexpire(INDEX_PREFIX + key.id, options.l2TtlMs)
        .exec()
    } catch (err) {
      log.warn({ err }, 'key cache L2 write failed')
    }
  }

  async function miss (presented: string, cacheKey: string): Promise<KeyCheck> {
    const startedAt = evictions
    const unchangedSinceStart = (keyId: string): boolean => (evictedAt.get(keyId) ?? -1) < startedAt
    const cached = await readL2(cacheKey)
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
      await writeL2(cacheKey, key)
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
      evictedAt.set(keyId, evictions)
      for (const cacheKey of [...keyIndex.get(keyId) ?? []]) positive.delete(cacheKey)
      // A re-enabled or re-permitted key must not stay refused for the negative TTL.
      negative.clear()
      if (redis === null || redis.status !== 'ready') return
      try {
        const members = await redis.smembers(INDEX_PREFIX + keyId)
        // One DEL per entry: in a Redis Cluster the entries live in different slots.
        await Promise.all([...members.map(async (m) => await redis.del(ENTRY_PREFIX + m)), redis.del(INDEX_PREFIX + keyId)])
      } catch (err) {
        log.warn({ err, keyId }, 'key cache L2 eviction failed; entries expire with their TTL')
      }
    },

    /**
     * After Redis was unreachable, events published meanwhile were lost: drop every
     * L2 entry so none outlives a change it did not hear of. L1 entries expire on
     * their own TTL, which bounds how long a missed eviction can last.
     */
    async flushL2 (): Promise<void> {
      if (redis === null || redis.status !== 'ready') return
      const nodes = 'nodes' in redis && typeof (redis as unknown as { nodes: unknown }).nodes === 'function'
        ? (redis as unknown as { nodes: (role: string) => Redis[] }).nodes('master')
        : [redis]
      for (const node of nodes) {
        for await (const batch of node.scanStream({ match: `${ENTRY_PREFIX}*`, count: 500 })) {
          await Promise.all((batch as string[]).map(async (k) => await node.del(k)))
        }
      }
    },

    get l1Size (): number { return positive.size }
  }
}

export type ApiKeyVerifier = ReturnType<typeof createApiKeyVerifier>
