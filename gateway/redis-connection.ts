import { Cluster } from 'ioredis'
import type { FastifyBaseLogger } from 'fastify'
import { createRedis, type RedisClient } from '../common/redis.js'
import type { RedisTarget } from '../common/redis-config.js'

/** The gateway's Redis connection (or cluster client), whoever opened it. */
export interface GatewayRedis {
  client: RedisClient
  /**
   * Calls `listener` each time the connection is ready again after it closed: events
   * published meanwhile were lost. Only closes after this call count.
   */
  onReturn: (listener: () => void) => void
  /** A cluster client stays 'ready' while one of the masters is dead: the cluster itself knows (one bounded command). */
  whole: () => Promise<boolean>
  /** Disconnects, if the connection was opened here; one passed in is its owner's to close. */
  close: () => void
}

/**
 * The connection a host passed in, or one opened to `target`; null when there is
 * neither (the gateway runs without Redis).
 */
export function connectGatewayRedis (target: RedisTarget | undefined, given: RedisClient | undefined, log: FastifyBaseLogger): GatewayRedis | null {
  const owned = given === undefined
  const client = given ?? (target !== undefined ? createRedis(target) : null)
  if (client === null) return null
  // ioredis emits 'error' on every failed reconnect; the state is reported by /readyz, not thrown.
  client.on('error', (err: Error) => { log.debug({ err }, 'redis connection error') })
  return {
    client,
    onReturn (listener) {
      let wasDown = false
      client.on('close', () => { wasDown = true })
      client.on('ready', () => {
        if (!wasDown) return
        wasDown = false
        listener()
      })
    },
    async whole () {
      if (!(client instanceof Cluster)) return true
      try {
        return /cluster_state:ok/.test(await client.cluster('INFO'))
      } catch {
        return false
      }
    },
    close () {
      if (owned) client.disconnect()
    }
  }
}
