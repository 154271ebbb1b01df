import t from 'tap'
import { pino } from 'pino'
import type { FastifyBaseLogger } from 'fastify'
import { createRedisEventBus } from '../../common/event-bus.js'
import type { AuthEvent } from '../../common/events.js'
import { createRedis } from '../../common/redis.js'
import { pollUntil } from '../helpers/gateway-auth.js'
import { startRedis } from '../helpers/redis.js'

const CHANNEL = 'event-bus-test:events'
const event = (keyId: string): AuthEvent => ({ type: 'key.revoked', keyId, at: new Date().toISOString() } as unknown as AuthEvent)

t.test('a Redis subscriber that lost its connection says so, and says when it hears events again', async (t) => {
  const redis = await startRedis(t)
  const log = pino({ level: 'silent' }) as unknown as FastifyBaseLogger
  const publisher = createRedis(redis.url)
  const subscriberSide = createRedis(redis.url)
  for (const client of [publisher, subscriberSide]) client.on('error', () => {}) // refused while Redis is stopped: expected
  const publishing = createRedisEventBus({ redis: publisher, channel: CHANNEL, log })
  const bus = createRedisEventBus({ redis: subscriberSide, channel: CHANNEL, log })
  t.teardown(async () => { await bus.close(); publisher.disconnect(); subscriberSide.disconnect() })

  const heard: string[] = []
  let resubscriptions = 0
  await bus.subscribe((e) => { heard.push((e as unknown as { keyId: string }).keyId) }, () => { resubscriptions++ })
  t.ok(bus.receiving(), 'receiving once subscribed')
  await publishing.publish(event('key_before'))
  t.not(await pollUntil(async () => heard.includes('key_before')), null, 'an event is heard')

  await redis.stop()
  t.not(await pollUntil(async () => !bus.receiving(), { timeoutMs: 5_000 }), null, 'not receiving while Redis is down')
  t.equal(resubscriptions, 0, 'no resubscription yet')

  await redis.restart()
  t.not(await pollUntil(async () => bus.receiving(), { timeoutMs: 10_000 }), null, 'receiving again after the restart')
  t.equal(resubscriptions, 1, 'onResubscribed ran once, so the caller can catch up on what it missed')
  // The publisher's own connection reconnects on its own schedule.
  t.not(await pollUntil(async () => publisher.status === 'ready', { timeoutMs: 10_000 }), null, 'the publisher is back too')
  await publishing.publish(event('key_after'))
  t.not(await pollUntil(async () => heard.includes('key_after')), null, 'events published after that are heard')
})
