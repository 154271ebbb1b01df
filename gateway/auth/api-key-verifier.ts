import { createHmac } from 'node:crypto'
import { LRUCache } from 'lru-cache'
import { Cluster, type Redis } from 'ioredis'
import type { FastifyBaseLogger } from 'fastify'
import { parseApiKey } from '../../common/api-key-format.js'
import { withinDeadline, type RedisClient } from '../../common/redis.js'
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
  redis: RedisClient | null
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
/** While L2 is set aside, how often a flush is tried: the first that succeeds puts L2 back in use. */
const L2_RECOVERY_INTERVAL_MS = 1_000
const CLUSTER_SLOTS = 16_384

/**
 * API key verification behind two cache tiers (DESIGN "Gateway request path" §3):
 * checksum without I/O → L1 (in-process LRU with TTL) → L2 (Redis) → identity.
 * Concurrent misses for one key share one identity call. Refusals are cached in L1
 * only, briefly: enough to absorb a flood of the same bad key, short enough that a
 * re-enabled key works again quickly. Entries are evicted by key id when identity
 * announces a change; a verification that was in flight during an eviction is not
 * cached, so a revoked key cannot come back through a race.
 *
 * Any L2 failure (Redis down, a cluster node dead, a command timed out) sets L2 aside:
 * requests go straight to identity, with no wait on Redis, until every L2 entry has
 * been flushed. An eviction that could not reach Redis would otherwise be undone by
 * the entry it failed to delete once Redis answers again.
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
  let l2InUse = true
  /** Bumped by each reason to set L2 aside: a flush that began before one does not put L2 back. */
  let setAsides = 0
  let recovering = false
  let recoveryTimer: NodeJS.Timeout | undefined
  let closed = false

  function l2Usable (): boolean {
    return redis !== null && redis.status === 'ready' && l2InUse
  }

  function setAsideL2 (): void {
    if (redis === null) return
    setAsides++
    if (l2InUse) log.warn('key cache L2 set aside until it is flushed; keys are verified by identity meanwhile')
    l2InUse = false
    if (recovering || closed) return
    recovering = true
    const attempt = async (): Promise<void> => {
      const since = setAsides
      try {
        await flushEntries()
        if (since === setAsides) {
          recovering = false
          l2InUse = true
          log.info('key cache L2 flushed and in use again')
          return
        }
      } catch (err) {
        log.debug({ err }, 'key cache L2 flush failed; trying again')
      }
      if (closed) { recovering = false; return }
      recoveryTimer = setTimeout(() => { void attempt() }, L2_RECOVERY_INTERVAL_MS).unref()
    }
    void attempt()
  }

  function l2Failed (err: unknown, message: string, fields: Record<string, unknown> = {}): void {
    log.warn({ err, ...fields }, message)
    setAsideL2()
  }

  /** Deletes every L2 entry, on every master of a cluster; throws unless all of them could be reached. */
  async function flushEntries (): Promise<void> {
    if (redis === null) return
    if (redis.status !== 'ready') throw new Error(`redis is ${redis.status}`)
    const nodes: Redis[] = redis instanceof Cluster ? await slotMasters(redis) : [redis]
    for (const node of nodes) {
      // A master may be up while another is dead: the cluster is then down, and its entries would be read again as soon as it is whole.
      if (redis instanceof Cluster && !/cluster_state:ok/.test(await node.cluster('INFO'))) throw new Error('redis cluster is not ok')
      for await (const batch of node.scanStream({ match: `${ENTRY_PREFIX}*`, count: 500 })) {
        await Promise.all((batch as string[]).map(async (k) => await node.del(k)))
      }
    }
  }

  /**
   * The connection to every master that serves slots, by the cluster's own slot map. A master
   * that is down (the client may have dropped it from its pool) fails the flush: it may come
   * back with its data, entries that missed evictions included.
   */
  async function slotMasters (cluster: Cluster): Promise<Redis[]> {
    let covered = 0
    const owners = new Set<string>()
    for (const [from, to, master] of await cluster.cluster('SLOTS')) {
      covered += to - from + 1
      if (master !== undefined) owners.add(`${master[0]}:${master[1]}`)
    }
    if (covered < CLUSTER_SLOTS) throw new Error('redis cluster: some slots have no master')
    const connected = new Map(cluster.nodes('master').map((node) => [`${node.options.host ?? ''}:${node.options.port ?? ''}`, node]))
    return [...owners].map((owner) => {
      const node = connected.get(owner)
      if (node === undefined) throw new Error(`redis cluster: master ${owner} is not connected`)
      return node
    })
  }

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
    if (redis === null || !l2Usable()) return null
    try {
      const raw = await withinDeadline(redis.get(ENTRY_PREFIX + cacheKey))
      if (raw === null) return null
      const entry = JSON.parse(raw) as VerifiedKey
      return entry.until > now() ? entry : null
    } catch (err) {
      l2Failed(err, 'key cache L2 read failed; asking identity')
      return null
    }
  }

  /** `stillCurrent` says whether no eviction of the key was heard since its verification began. */
  async function writeL2 (cacheKey: string, key: VerifiedKey, stillCurrent: () => boolean): Promise<void> {
    const ttl = Math.floor(key.until - now())
    if (redis === null || !l2Usable() || ttl <= 0) return
    const index = INDEX_PREFIX + key.id
    const entry = ENTRY_PREFIX + cacheKey
    let abandoned = false
    const write = async (): Promise<void> => {
      // In a Redis Cluster the entry and its index are in different slots, so no MULTI spans both (CROSSSLOT).
      // The index goes first: no entry is ever in Redis without the index an eviction reads to find it.
      const indexed = await redis.multi().sadd(index, cacheKey).pexpire(index, options.l2TtlMs).exec()
      const failed = indexed?.find(([err]) => err !== null)?.[0]
      if (indexed === null || failed !== undefined) throw failed ?? new Error('key cache index transaction aborted')
      // Past the deadline the request has gone on without L2, which is set aside: no entry is written behind it.
      if (abandoned) return
      await redis.set(entry, JSON.stringify(key), 'PX', ttl)
      // An eviction heard while this was written may have run before the SET landed: undo it.
      if (!stillCurrent()) await redis.del(entry)
    }
    try {
      await withinDeadline(write())
    } catch (err) {
      abandoned = true
      l2Failed(err, 'key cache L2 write failed')
    }
  }

  async function miss (presented: string, cacheKey: string): Promise<KeyCheck> {
    const startedAt = evictions
    // evictedAt holds the count once that eviction finished (Infinity while it runs): equal to startedAt means it finished before this miss.
    const unchangedSinceStart = (keyId: string): boolean => (evictedAt.get(keyId) ?? -1) <= startedAt
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
      await writeL2(cacheKey, key, () => unchangedSinceStart(key.id))
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
      if (redis === null) { evictedAt.set(keyId, evictions); return }
      if (!l2Usable()) {
        // Entries Redis still holds for the key are dropped by the flush that must come before L2 is used again.
        setAsideL2()
      } else {
        try {
          await withinDeadline((async () => {
            const members = new Set([...await redis.smembers(INDEX_PREFIX + keyId), ...written])
            // One DEL per entry: in a Redis Cluster the entries live in different slots.
            await Promise.all([...[...members].map(async (m) => await redis.del(ENTRY_PREFIX + m)), redis.del(INDEX_PREFIX + keyId)])
          })())
        } catch (err) {
          l2Failed(err, 'key cache L2 eviction failed', { keyId })
        }
      }
      // Counted again once L2 is clean: a miss that began while the deletes ran may have read the stale entry.
      evictions++
      evictedAt.set(keyId, evictions)
    },

    /**
     * After Redis was unreachable, events published meanwhile were lost: L2 is set
     * aside until every entry has been dropped, so none outlives a change it did not
     * hear of. L1 entries expire on their own TTL, which bounds how long a missed
     * eviction can last.
     */
    setAsideL2,

    /** Whether L2 is read and written now (false while Redis is unusable or L2 awaits its flush). */
    get l2InUse (): boolean { return l2Usable() },

    get l1Size (): number { return positive.size },

    close (): void {
      closed = true
      clearTimeout(recoveryTimer)
    }
  }
}

export type ApiKeyVerifier = ReturnType<typeof createApiKeyVerifier>
