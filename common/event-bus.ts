import { EventEmitter } from 'node:events'
import type { Redis } from 'ioredis'
import type { FastifyBaseLogger } from 'fastify'
import { parseAuthEvent, type AuthEvent } from './events.js'

/**
 * Where invalidation events travel. Production uses Redis pub/sub so every gateway
 * replica hears them; a single-process demo uses the in-memory bus.
 */
export interface EventBus {
  publish: (event: AuthEvent) => Promise<void>
  subscribe: (listener: (event: AuthEvent) => void) => Promise<() => Promise<void>>
  close: () => Promise<void>
}

const PUBLISH_TIMEOUT_MS = 1_000

export function createMemoryEventBus (): EventBus {
  const emitter = new EventEmitter()
  return {
    async publish (event) { emitter.emit('event', event) },
    async subscribe (listener) {
      emitter.on('event', listener)
      return async () => { emitter.off('event', listener) }
    },
    async close () { emitter.removeAllListeners() }
  }
}

export interface RedisEventBusOptions {
  /** A connection used for PUBLISH; the bus opens its own subscriber connection on demand. */
  redis: Redis
  channel: string
  log: FastifyBaseLogger
}

/**
 * Redis pub/sub. Publishing never fails the change that caused it: if Redis is
 * unreachable the event is logged as lost, and gateways fall back on their L1 TTL.
 */
export function createRedisEventBus (options: RedisEventBusOptions): EventBus {
  const { redis, channel, log } = options
  const subscribers: Redis[] = []
  return {
    async publish (event) {
      let timer: NodeJS.Timeout | undefined
      try {
        await Promise.race([
          redis.publish(channel, JSON.stringify(event)),
          new Promise((_resolve, reject) => { timer = setTimeout(() => reject(new Error('publish timed out')), PUBLISH_TIMEOUT_MS) })
        ])
      } catch (err) {
        log.warn({ err, eventType: event.type }, 'invalidation event not published; gateways rely on their cache TTL')
      } finally {
        clearTimeout(timer)
      }
    },
    async subscribe (listener) {
      // The subscriber queues SUBSCRIBE until connected, and ioredis re-subscribes after reconnects.
      const subscriber = redis.duplicate({ enableOfflineQueue: true })
      // Reconnection failures are expected while Redis is down; ioredis retries on its own.
      subscriber.on('error', (err: Error) => { log.debug({ err }, 'event subscriber connection error') })
      subscribers.push(subscriber)
      subscriber.on('message', (_channel: string, message: string) => {
        const event = parseAuthEvent(message)
        if (event === null) log.warn({ channel }, 'ignored a malformed invalidation event')
        else listener(event)
      })
      await subscriber.subscribe(channel)
      return async () => {
        subscriber.disconnect()
        subscribers.splice(subscribers.indexOf(subscriber), 1)
      }
    },
    async close () {
      for (const subscriber of subscribers.splice(0)) subscriber.disconnect()
    }
  }
}
