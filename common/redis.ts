import { Redis, type RedisOptions } from 'ioredis'

/**
 * One place that opens Redis connections. Commands fail fast while disconnected
 * (no offline queue) so that a Redis outage degrades to the fallbacks instead of
 * stalling requests; ioredis keeps reconnecting in the background. `overrides` are
 * ioredis options for one caller's needs (the CLI's quick exit).
 */
export function createRedis (url: string, overrides: RedisOptions = {}): Redis {
  return new Redis(url, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    lazyConnect: false,
    retryStrategy: (attempt) => Math.min(attempt * 100, 2_000),
    ...overrides
  })
}

/** Resolves when the connection is ready, or after `timeoutMs` (the caller runs degraded). */
export async function waitForRedis (redis: Redis, timeoutMs: number): Promise<boolean> {
  if (redis.status === 'ready') return true
  return await new Promise((resolve) => {
    const timer = setTimeout(() => { redis.off('ready', onReady); resolve(false) }, timeoutMs)
    function onReady (): void { clearTimeout(timer); resolve(true) }
    redis.once('ready', onReady)
  })
}
