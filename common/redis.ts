import { Cluster, Redis, type RedisOptions } from 'ioredis'
import type { RedisTarget } from './redis-config.js'

/** A standalone connection or a cluster client: the commands Portier uses are the same on both. */
export type RedisClient = Redis | Cluster

/**
 * Longest wait for one Redis command. Redis answers in well under a millisecond; a
 * command that takes this long went to a node that died without closing its socket
 * (or a cluster node not yet declared failed), and the caller falls back instead.
 */
export const REDIS_COMMAND_TIMEOUT_MS = 500

const reconnectDelay = (attempt: number): number => Math.min(attempt * 100, 2_000)

/**
 * Rejects when `operation` has not settled within `ms`. The command timeout bounds one
 * attempt; a cluster client retries on its own (a command redirected to a master that
 * just died, a MULTI to it: over a second in all), which the request path cannot wait for.
 */
export async function withinDeadline<T> (operation: Promise<T>, ms = REDIS_COMMAND_TIMEOUT_MS): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  try {
    return await Promise.race([
      operation,
      new Promise<never>((_resolve, reject) => { timer = setTimeout(() => { reject(new Error(`redis did not answer within ${ms} ms`)) }, ms) })
    ])
  } finally {
    clearTimeout(timer)
  }
}

/**
 * One place that opens Redis connections. Commands fail fast while disconnected
 * (no offline queue) and give up after REDIS_COMMAND_TIMEOUT_MS, so that a Redis
 * outage degrades to the fallbacks instead of stalling requests; ioredis keeps
 * reconnecting in the background. `overrides` are ioredis options for one caller's
 * needs (the CLI's quick exit); on a cluster they apply to each node's connection.
 * A string is a standalone server's URL.
 */
export function createRedis (where: RedisTarget | string, overrides: RedisOptions = {}): RedisClient {
  const target: RedisTarget = typeof where === 'string' ? { mode: 'standalone', url: where } : where
  const connection: RedisOptions = { enableOfflineQueue: false, maxRetriesPerRequest: 1, commandTimeout: REDIS_COMMAND_TIMEOUT_MS, ...overrides }
  if (target.mode === 'standalone') {
    return new Redis(target.url, { lazyConnect: false, retryStrategy: reconnectDelay, ...connection })
  }
  return new Cluster(target.nodes, {
    enableOfflineQueue: false,
    clusterRetryStrategy: reconnectDelay,
    // CLUSTERDOWN (slots without a serving master): answer at once, the callers have fallbacks; ioredis would retry for up to 1.6 s.
    retryDelayOnClusterDown: 0,
    // ioredis re-reads the slot map only when a command is redirected or fails (no periodic refresh by default): a master
    // that restarted, or a replica promoted in its place, would stay unknown while its slots see no traffic.
    slotsRefreshInterval: 2_000,
    redisOptions: {
      ...connection,
      ...(target.username !== undefined ? { username: target.username } : {}),
      ...(target.password !== undefined ? { password: target.password } : {}),
      ...(target.tls ? { tls: {} } : {})
    }
  })
}

/** Resolves when the connection is ready, or after `timeoutMs` (the caller runs degraded). */
export async function waitForRedis (redis: RedisClient, timeoutMs: number): Promise<boolean> {
  if (redis.status === 'ready') return true
  return await new Promise((resolve) => {
    const timer = setTimeout(() => { redis.off('ready', onReady); resolve(false) }, timeoutMs)
    function onReady (): void { clearTimeout(timer); resolve(true) }
    redis.once('ready', onReady)
  })
}
