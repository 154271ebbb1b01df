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
  /**
   * `onResubscribed` runs each time a subscription hears events again after it could
   * not (a Redis subscriber that reconnected): events published meanwhile were lost.
   */
  subscribe: (listener: (event: AuthEvent) => void, onResubscribed?: () => void) => Promise<() => Promise<void>>
  /** Whether every subscription hears events now (false while a Redis subscriber reconnects). */
  receiving: () => boolean
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
    receiving: () => true,
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
  /** Subscribers whose SUBSCRIBE is confirmed on their current connection. */
  const hearing = new WeakSet<Redis>()
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
    async subscribe (listener, onResubscribed) {
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
      hearing.add(subscriber)
      subscriber.on('close', () => { hearing.delete(subscriber) })
      subscriber.on('ready', () => {
        // ioredis re-subscribes on its own; this SUBSCRIBE (idempotent) gives a confirmed point from which events are heard.
        subscriber.subscribe(channel).then(() => {
          hearing.add(subscriber)
          onResubscribed?.()
        }, (err: unknown) => { log.debug({ err }, 'event subscriber could not re-subscribe yet') })
      })
      return async () => {
        subscriber.disconnect()
        subscribers.splice(subscribers.indexOf(subscriber), 1)
      }
    },
    receiving: () => subscribers.every((subscriber) => hearing.has(subscriber)),
    async close () {
      for (const subscriber of subscribers.splice(0)) subscriber.disconnect()
    }
  }
}
