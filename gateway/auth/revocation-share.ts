import type { FastifyBaseLogger } from 'fastify'
import type { RedisClient } from '../../common/redis.js'

/** The two sets gateways share: revoked sessions, and users whose permissions changed. */
export type SharedRevocationSet = 'revoked-sessions' | 'stale-users'

/**
 * Where gateways share what they learnt of revocations, so that one that starts late,
 * or missed events, catches up: sets of members scored by an instant (ms).
 */
export interface RevocationShare {
  /** Adds or raises each member's score: a later instant never gets replaced by an earlier one from a slower gateway. Never throws. */
  add: (set: SharedRevocationSet, entries: Array<[member: string, score: number]>) => Promise<void>
  /** Members scored `from` or later. Throws when the share cannot be read. */
  read: (set: SharedRevocationSet, from: number) => Promise<Array<[member: string, score: number]>>
  /** Drops members scored `upTo` or earlier. Never throws: trimming is housekeeping. */
  trim: (set: SharedRevocationSet, upTo: number) => Promise<void>
}

/** In this process only: a gateway without Redis has nobody to share with. */
export function createMemoryRevocationShare (): RevocationShare {
  const sets: Record<SharedRevocationSet, Map<string, number>> = { 'revoked-sessions': new Map(), 'stale-users': new Map() }
  return {
    async add (set, entries) {
      const scores = sets[set]
      for (const [member, score] of entries) if (score > (scores.get(member) ?? Number.NEGATIVE_INFINITY)) scores.set(member, score)
    },
    async read (set, from) {
      return [...sets[set]].filter(([, score]) => score >= from)
    },
    async trim (set, upTo) {
      const scores = sets[set]
      for (const [member, score] of scores) if (score <= upTo) scores.delete(member)
    }
  }
}

const REDIS_KEYS: Record<SharedRevocationSet, string> = {
  'revoked-sessions': 'portier:revoked-sessions',
  'stale-users': 'portier:stale-users'
}

/** Sorted sets in Redis. While Redis is not ready, nothing is shared and nothing is read: events and identity's feed still tell. */
export function createRedisRevocationShare (options: { redis: RedisClient, log: FastifyBaseLogger }): RevocationShare {
  const { redis, log } = options
  const ready = (): boolean => redis.status === 'ready'
  return {
    async add (set, entries) {
      if (!ready() || entries.length === 0) return
      try {
        await redis.zadd(REDIS_KEYS[set], 'GT', ...entries.flatMap(([member, score]) => [score, member]))
      } catch (err) {
        log.warn({ err }, 'could not share a revocation in Redis; other gateways still hear the event')
      }
    },
    async read (set, from) {
      if (!ready()) return []
      const flat = await redis.zrangebyscore(REDIS_KEYS[set], from, '+inf', 'WITHSCORES')
      const entries: Array<[string, number]> = []
      for (let i = 0; i < flat.length; i += 2) entries.push([flat[i] as string, Number(flat[i + 1])])
      return entries
    },
    async trim (set, upTo) {
      if (!ready()) return
      try {
        await redis.zremrangebyscore(REDIS_KEYS[set], '-inf', upTo)
      } catch {
        // The next prune tries again.
      }
    }
  }
}
