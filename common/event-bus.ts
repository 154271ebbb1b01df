import { EventEmitter } from 'node:events'
import { Cluster, Redis } from 'ioredis'
import type { RedisClient } from './redis.js'
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
  /** A connection (or cluster client) used for PUBLISH; the bus opens its own subscriber connection on demand. */
  redis: RedisClient
  channel: string
  log: FastifyBaseLogger
}

/**
 * Redis pub/sub. Publishing never fails the change that caused it: if Redis is
 * unreachable the event is logged as lost, and gateways fall back on their L1 TTL.
 */
export function createRedisEventBus (options: RedisEventBusOptions): EventBus {
  const { redis, channel, log } = options
  const subscriptions: Subscription[] = []
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
      const deliver = (message: string): void => {
        const event = parseAuthEvent(message)
        if (event === null) log.warn({ channel }, 'ignored a malformed invalidation event')
        else listener(event)
      }
      let subscription: Subscription
      if (redis instanceof Cluster) {
        // Listed before it hears anything, so that close() also ends one still looking for a node.
        const pending = subscribeOnCluster(redis, channel, log, deliver, onResubscribed)
        subscriptions.push(subscription = pending.subscription)
        await pending.ready
      } else {
        subscriptions.push(subscription = await subscribeOnServer(redis, channel, log, deliver, onResubscribed))
      }
      return async () => {
        subscription.stop()
        subscriptions.splice(subscriptions.indexOf(subscription), 1)
      }
    },
    receiving: () => subscriptions.every((subscription) => subscription.hearing()),
    async close () {
      for (const subscription of subscriptions.splice(0)) subscription.stop()
    }
  }
}

interface Subscription {
  /** Whether SUBSCRIBE is confirmed on the current connection. */
  hearing: () => boolean
  stop: () => void
}

async function subscribeOnServer (redis: Redis, channel: string, log: FastifyBaseLogger, deliver: (message: string) => void, onResubscribed?: () => void): Promise<Subscription> {
  // The subscriber queues SUBSCRIBE until connected (and waits for it: no command timeout), and ioredis re-subscribes after reconnects.
  const subscriber = redis.duplicate({ enableOfflineQueue: true, commandTimeout: undefined })
  let hearing = false
  // Reconnection failures are expected while Redis is down; ioredis retries on its own.
  subscriber.on('error', (err: Error) => { log.debug({ err }, 'event subscriber connection error') })
  subscriber.on('message', (_channel: string, message: string) => { deliver(message) })
  await subscriber.subscribe(channel)
  hearing = true
  subscriber.on('close', () => { hearing = false })
  subscriber.on('ready', () => {
    // ioredis re-subscribes on its own; this SUBSCRIBE (idempotent) gives a confirmed point from which events are heard.
    subscriber.subscribe(channel).then(() => {
      hearing = true
      onResubscribed?.()
    }, (err: unknown) => { log.debug({ err }, 'event subscriber could not re-subscribe yet') })
  })
  return { hearing: () => hearing, stop: () => { subscriber.disconnect() } }
}

/** Between attempts to subscribe on some node: grows while none answers, like the connections' own retries. */
const clusterRetryDelay = (attempt: number): number => Math.min(attempt * 200, 2_000)

/**
 * A Redis Cluster delivers every PUBLISH to the subscribers of every node, so one
 * subscribed connection to any node hears every event. ioredis' own cluster subscriber
 * moves to another node silently when its node dies, and events published meanwhile
 * would be lost unnoticed; this one says when it was deaf (the caller then catches up,
 * as after a standalone reconnect) and picks a node the cluster client can reach.
 * `ready` resolves once it first hears events, or when it is stopped before that.
 */
function subscribeOnCluster (cluster: Cluster, channel: string, log: FastifyBaseLogger, deliver: (message: string) => void, onResubscribed?: () => void): { subscription: Subscription, ready: Promise<void> } {
  let current: Redis | null = null
  let hearing = false
  let heardBefore = false
  let stopped = false
  let attempts = 0
  let retry: NodeJS.Timeout | undefined
  let settle: () => void = () => {}
  const ready = new Promise<void>((resolve) => { settle = resolve })

  const pickNode = (): Redis | undefined => {
    const nodes = cluster.nodes('all')
    const reachable = nodes.filter((node) => node.status === 'ready')
    const from = reachable.length > 0 ? reachable : nodes
    return from[Math.floor(Math.random() * from.length)]
  }
  const later = (): void => {
    if (!stopped) retry = setTimeout(connect, clusterRetryDelay(++attempts))
  }
  function connect (): void {
    const node = pickNode()
    // Before the cluster client has a slot map it may know no node yet.
    if (node === undefined) { later(); return }
    const subscriber = new Redis({ ...node.options, lazyConnect: false, enableOfflineQueue: true, commandTimeout: undefined, retryStrategy: () => null, readOnly: false })
    current = subscriber
    subscriber.on('error', (err: Error) => { log.debug({ err }, 'event subscriber connection error') })
    subscriber.on('message', (_channel: string, message: string) => { deliver(message) })
    // No reconnection to the same node (it may be gone for good): another node is picked.
    subscriber.once('end', () => {
      hearing = false
      if (current === subscriber) current = null
      later()
    })
    subscriber.subscribe(channel).then(() => {
      if (current !== subscriber) return
      hearing = true
      attempts = 0
      if (heardBefore) onResubscribed?.()
      heardBefore = true
      settle()
    }, (err: unknown) => {
      log.debug({ err }, 'event subscriber could not subscribe on this node; trying another')
      subscriber.disconnect()
    })
  }
  connect()
  const subscription: Subscription = {
    hearing: () => hearing,
    stop: () => {
      stopped = true
      clearTimeout(retry)
      current?.disconnect()
      settle()
    }
  }
  return { subscription, ready }
}
