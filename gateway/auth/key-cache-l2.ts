import type { GrantedPolicy } from '../../common/traffic/policy.js'
import { Cluster, type Redis } from 'ioredis'
import type { FastifyBaseLogger } from 'fastify'
import { withinDeadline, type RedisClient } from '../../common/redis.js'

/** A verified key, as the gateway keeps it in both cache tiers. */
export interface VerifiedKey {
  id: string
  permissions: string[]
  /** When the old secret of a rotation was presented: the client is told to switch. */
  deprecation: { deprecatedAt: number, sunsetAt: number } | null
  /** The user the key belongs to (per-user policies count it with the user's other credentials); null: none. */
  owner: string | null
  /** The key's traffic policies and its owner's roles'. */
  policies: GrantedPolicy[]
  /** The entry must not be used after this instant (key expiry, sunset, or cache TTL). */
  until: number
}

/**
 * L2 of the API key cache (DESIGN "Gateway request path" §3): verified keys shared by
 * every gateway replica, under the HMAC cache key of the presented key. No method
 * throws: a tier that fails answers "not cached", and the verifier asks identity.
 */
export interface KeyCacheL2 {
  /** The entry under `cacheKey`, unless absent, past its `until`, or L2 is not in use. */
  read: (cacheKey: string) => Promise<VerifiedKey | null>
  /** `stillCurrent` says whether no eviction of the key was heard since its verification began. */
  write: (cacheKey: string, key: VerifiedKey, stillCurrent: () => boolean) => Promise<void>
  /** Deletes the entries of one key: those L2 finds under its id, and `written`, the ones this process wrote. */
  evict: (keyId: string, written: string[]) => Promise<void>
  /** Events may have been missed: no entry is used again until every entry has been dropped. */
  setAside: () => void
  /** Whether L2 is read and written now. */
  readonly inUse: boolean
  close: () => void
}

/** Without Redis there is no L2: one gateway, L1 and identity. */
export function createNoKeyCacheL2 (): KeyCacheL2 {
  return {
    async read () { return null },
    async write () {},
    async evict () {},
    setAside () {},
    inUse: false,
    close () {}
  }
}

export interface RedisKeyCacheL2Options {
  redis: RedisClient
  l2TtlMs: number
  log: FastifyBaseLogger
  now: () => number
}

const ENTRY_PREFIX = 'portier:key:'
const INDEX_PREFIX = 'portier:key-index:'
/** While L2 is set aside, how often a flush is tried: the first that succeeds puts L2 back in use. */
const L2_RECOVERY_INTERVAL_MS = 1_000
const CLUSTER_SLOTS = 16_384

/**
 * L2 in Redis, with an index per key id that an eviction reads to find the key's entries.
 *
 * Any L2 failure (Redis down, a cluster node dead, a command timed out) sets L2 aside:
 * requests go straight to identity, with no wait on Redis, until every L2 entry has
 * been flushed. An eviction that could not reach Redis would otherwise be undone by
 * the entry it failed to delete once Redis answers again.
 */
export function createRedisKeyCacheL2 (options: RedisKeyCacheL2Options): KeyCacheL2 {
  const { redis, log, now } = options
  let inUse = true
  /** Bumped by each reason to set L2 aside: a flush that began before one does not put L2 back. */
  let setAsides = 0
  let recovering = false
  let recoveryTimer: NodeJS.Timeout | undefined
  let closed = false

  function usable (): boolean {
    return redis.status === 'ready' && inUse
  }

  function setAside (): void {
    setAsides++
    if (inUse) log.warn('key cache L2 set aside until it is flushed; keys are verified by identity meanwhile')
    inUse = false
    if (recovering || closed) return
    recovering = true
    const attempt = async (): Promise<void> => {
      const since = setAsides
      try {
        await flushEntries()
        if (since === setAsides) {
          recovering = false
          inUse = true
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

  function failed (err: unknown, message: string, fields: Record<string, unknown> = {}): void {
    log.warn({ err, ...fields }, message)
    setAside()
  }

  /** Deletes every L2 entry, on every master of a cluster; throws unless all of them could be reached. */
  async function flushEntries (): Promise<void> {
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

  return {
    async read (cacheKey) {
      if (!usable()) return null
      try {
        const raw = await withinDeadline(redis.get(ENTRY_PREFIX + cacheKey))
        if (raw === null) return null
        const entry = JSON.parse(raw) as VerifiedKey
        // An entry written before keys carried traffic policies would let the key pass unlimited: ask identity again.
        if (!Array.isArray(entry.policies)) return null
        return entry.until > now() ? entry : null
      } catch (err) {
        failed(err, 'key cache L2 read failed; asking identity')
        return null
      }
    },

    async write (cacheKey, key, stillCurrent) {
      const ttl = Math.floor(key.until - now())
      if (!usable() || ttl <= 0) return
      const index = INDEX_PREFIX + key.id
      const entry = ENTRY_PREFIX + cacheKey
      let abandoned = false
      const write = async (): Promise<void> => {
        // In a Redis Cluster the entry and its index are in different slots, so no MULTI spans both (CROSSSLOT).
        // The index goes first: no entry is ever in Redis without the index an eviction reads to find it.
        const indexed = await redis.multi().sadd(index, cacheKey).pexpire(index, options.l2TtlMs).exec()
        const failedCommand = indexed?.find(([err]) => err !== null)?.[0]
        if (indexed === null || failedCommand !== undefined) throw failedCommand ?? new Error('key cache index transaction aborted')
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
        failed(err, 'key cache L2 write failed')
      }
    },

    async evict (keyId, written) {
      if (!usable()) {
        // Entries Redis still holds for the key are dropped by the flush that must come before L2 is used again.
        setAside()
        return
      }
      try {
        await withinDeadline((async () => {
          const members = new Set([...await redis.smembers(INDEX_PREFIX + keyId), ...written])
          // One DEL per entry: in a Redis Cluster the entries live in different slots.
          await Promise.all([...[...members].map(async (m) => await redis.del(ENTRY_PREFIX + m)), redis.del(INDEX_PREFIX + keyId)])
        })())
      } catch (err) {
        failed(err, 'key cache L2 eviction failed', { keyId })
      }
    },

    setAside,

    /** False while Redis is unusable or L2 awaits its flush. */
    get inUse (): boolean { return usable() },

    close (): void {
      closed = true
      clearTimeout(recoveryTimer)
    }
  }
}
