import { Redis } from 'ioredis'
import { parseAuthEvent, type AuthEvent, type AuthEventType } from '../../common/events.js'

/** The event of one type, e.g. `EventOf<'session.revoked'>` has `sessionIds`. */
export type EventOf<T extends AuthEventType> = Extract<AuthEvent, { type: T }>

/**
 * Long enough for a loaded CI machine. The publish is awaited before the admin
 * answer is sent, so a delivered event is normally here within a millisecond.
 */
const DEFAULT_NEXT_TIMEOUT_MS = 2_000

export interface NextOptions<T extends AuthEventType> {
  /** Only an event this returns true for is taken (e.g. the right keyId). */
  where?: (event: EventOf<T>) => boolean
  timeoutMs?: number
}

export interface EventWatcher {
  /** Every message received on the channel, in order, exactly as published. */
  readonly raw: string[]
  /** Every parsed event received so far, in order, whether taken by `next` or not. */
  readonly received: AuthEvent[]
  /**
   * The oldest event of `type` not yet taken, waiting for one when none has arrived.
   * Events are buffered from the moment of subscription, so it does not matter
   * whether the test calls this before or after the action that publishes.
   */
  next: <T extends AuthEventType>(type: T, options?: NextOptions<T>) => Promise<EventOf<T>>
  /** Received events not yet taken by `next`, oldest first (optionally of one type). */
  pending: (type?: AuthEventType) => AuthEvent[]
  close: () => Promise<void>
}

interface Waiter {
  type: AuthEventType
  where: (event: AuthEvent) => boolean
  resolve: (event: AuthEvent) => void
}

/**
 * Subscribes to identity's invalidation channel with a real ioredis subscriber
 * (its own connection, as a gateway would have) and lets a test await events.
 * `redisUrl` is the standalone Redis the identity publishes on, `eventsChannel` its channel.
 */
export async function watchEvents (
  t: { teardown: (fn: () => unknown) => void },
  config: { redisUrl: string | undefined, eventsChannel: string }
): Promise<EventWatcher> {
  if (config.redisUrl === undefined) throw new Error('watchEvents: start identity with REDIS_URL (from startRedis) to observe its events')
  const channel = config.eventsChannel
  const subscriber = new Redis(config.redisUrl, { lazyConnect: true })
  // Outage tests stop Redis on purpose; the reconnect errors are expected noise.
  subscriber.on('error', () => {})
  const raw: string[] = []
  const received: AuthEvent[] = []
  const queue: AuthEvent[] = []
  const waiters: Waiter[] = []

  subscriber.on('message', (from: string, message: string) => {
    if (from !== channel) return
    raw.push(message)
    const event = parseAuthEvent(message)
    if (event === null) return
    received.push(event)
    const waiter = waiters.find((w) => w.type === event.type && w.where(event))
    if (waiter === undefined) {
      queue.push(event)
      return
    }
    waiters.splice(waiters.indexOf(waiter), 1)
    waiter.resolve(event)
  })

  await subscriber.connect()
  // SUBSCRIBE resolves once Redis confirmed it: from here on nothing published is missed.
  await subscriber.subscribe(channel)
  let closed = false
  const close = async (): Promise<void> => {
    if (closed) return
    closed = true
    subscriber.disconnect()
  }
  t.teardown(close)

  return {
    raw,
    received,
    pending: (type) => queue.filter((e) => type === undefined || e.type === type),
    close,
    async next<T extends AuthEventType> (type: T, options: NextOptions<T> = {}): Promise<EventOf<T>> {
      const where = (event: AuthEvent): boolean => options.where === undefined || options.where(event as EventOf<T>)
      const index = queue.findIndex((e) => e.type === type && where(e))
      if (index !== -1) return queue.splice(index, 1)[0] as EventOf<T>
      const timeoutMs = options.timeoutMs ?? DEFAULT_NEXT_TIMEOUT_MS
      return await new Promise<EventOf<T>>((resolve, reject) => {
        const waiter: Waiter = {
          type,
          where,
          resolve: (event) => { clearTimeout(timer); resolve(event as EventOf<T>) }
        }
        const timer = setTimeout(() => {
          waiters.splice(waiters.indexOf(waiter), 1)
          reject(new Error(`no ${type} event on ${channel} within ${timeoutMs} ms; received: ${JSON.stringify(received)}`))
        }, timeoutMs)
        waiters.push(waiter)
      })
    }
  }
}
