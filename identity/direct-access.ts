import type { FastifyBaseLogger } from 'fastify'
import { pino } from 'pino'
import { Writable } from 'node:stream'
import { createRedisEventBus, type EventBus } from '../common/event-bus.js'
import { REDACTED_PATHS } from '../common/logger.js'
import { createRedis, waitForRedis, type RedisClient } from '../common/redis.js'
import { loadIdentityCliConfig, type IdentityCoreConfig } from './config.js'
import { systemClock } from './services/clock.js'
import { createIdentityServices, type IdentityServices, type ServicesLog } from './services/index.js'
import { createOutboxEventBus, type OutboxEventBus } from './services/outbox-event-bus.js'
import { withStoredEncryptionKey } from './store/credentials-file.js'
import { openDatabase } from './store/database.js'
import { createOutboxStore } from './store/outbox-store.js'

/**
 * Identity opened directly on its database, beside the server rather than through it:
 * what the `portier` commands run on. The same configuration, database, services and
 * event channel as the server, without its HTTP credentials.
 */

/** How long to wait for Redis before going on without it (as the server at start). */
const REDIS_WAIT_MS = 2_000
/** PUBLISH has been answered by the time this closes, so there is nothing left to wait for. */
const REDIS_DISCONNECT_TIMEOUT_MS = 100
/**
 * Without Redis, how long closing after a change waits for the identity server to
 * relay its events before saying that none did: the propagation bound.
 */
const RELAY_WAIT_MS = 1_000

/** Where the operator reads what they should know: one plain sentence each (the CLI prints them as warnings). */
export type Notice = (message: string) => void

export interface DirectIdentity {
  services: IdentityServices
  /** Closes Redis and the database; without Redis, first waits (a bounded time) for the server to relay the changes made. */
  close: () => Promise<void>
}

/** The event bus logs with pino; each warning becomes one plain notice. */
function noticeLogger (notice: Notice): FastifyBaseLogger {
  const lines = new Writable({
    write (chunk: Buffer, _encoding, done) {
      const entry = JSON.parse(chunk.toString()) as { msg?: string, eventType?: string }
      notice(`${entry.msg ?? 'unknown problem'}${entry.eventType !== undefined ? ` (${entry.eventType})` : ''}`)
      done()
    }
  })
  return pino({ level: 'warn', base: null, redact: { paths: REDACTED_PATHS, censor: '[redacted]' } }, lines)
}

/**
 * Where changes are published directly, besides the outbox: Redis when configured, so
 * that gateways hear a change even while identity is down; nowhere otherwise (the
 * identity server relays the outbox on its in-process bus).
 */
async function connectEvents (config: IdentityCoreConfig, notice: Notice): Promise<{ events: EventBus, redis: RedisClient | null }> {
  if (config.redis === undefined) {
    const events: EventBus = {
      async publish () {},
      async subscribe () { return async () => {} },
      receiving: () => false,
      async close () {}
    }
    return { events, redis: null }
  }
  // ioredis waits up to 2 s (its default) for a socket that never connected to close: a command should just exit.
  const redis = createRedis(config.redis, { disconnectTimeout: REDIS_DISCONNECT_TIMEOUT_MS })
  let lastError = ''
  // ioredis retries in the background; one summary below is enough (the URL may hold a password: never shown).
  redis.on('error', (err: Error) => { lastError = err.message })
  if (!await waitForRedis(redis, REDIS_WAIT_MS)) {
    notice(`Redis (${config.redis.mode === 'cluster' ? 'REDIS_CLUSTER_NODES' : 'REDIS_URL'}) is not reachable${lastError !== '' ? ` (${lastError})` : ''}: gateways hear of changes only when identity relays them (if it reaches Redis), else when their caches expire`)
  }
  return { events: createRedisEventBus({ redis, channel: config.eventsChannel, log: noticeLogger(notice) }), redis }
}

/**
 * Start-up notes: a change made to stored keys on opening (their encryption at rest)
 * is told; the "stored unencrypted" warning is the server's, at each of its starts,
 * and would only repeat on every command here.
 */
function startupNotes (notice: Notice): ServicesLog {
  return {
    info: (fields, msg) => notice(`${msg}${typeof fields.count === 'number' ? ` (${fields.count})` : ''}`),
    warn: () => {}
  }
}

/** Without a direct path to the gateways, says when no identity server relayed the events written in time. */
async function confirmRelayed (events: OutboxEventBus, notice: Notice): Promise<void> {
  if (!events.wrote() || await events.relayed(RELAY_WAIT_MS)) return
  notice(`the change is saved, but no identity server relayed it to the gateways within ${RELAY_WAIT_MS / 1000} s ` +
    '(is Portier running, on this IDENTITY_DATABASE_PATH?): identity relays it when it next starts; ' +
    'until then a gateway keeps what it has cached until its cache TTL')
}

/**
 * Opens identity on the database named by `env` (IDENTITY_DATABASE_PATH), which must
 * exist: this never creates one. A failure on the way closes what was opened.
 */
export async function openIdentityDirectly (env: Record<string, string | undefined>, notice: Notice): Promise<DirectIdentity> {
  // Beside an npm start database, its credentials file holds the signing keys' encryption key.
  const config = loadIdentityCliConfig(withStoredEncryptionKey(env))
  const db = openDatabase(config.databasePath, { create: false })
  const outbox = createOutboxStore(db)
  let connected: { events: OutboxEventBus, redis: RedisClient | null } | null = null
  const close = async (): Promise<void> => {
    if (connected !== null) {
      if (connected.redis === null) await confirmRelayed(connected.events, notice)
      await connected.events.close()
      connected.redis?.disconnect()
    }
    db.close()
  }
  try {
    const direct = await connectEvents(config, notice)
    // Every event also goes to the outbox, for the identity server to relay on its own bus.
    connected = { events: createOutboxEventBus({ store: outbox, clock: systemClock, direct: direct.events }), redis: direct.redis }
    const services = await createIdentityServices(config, { db, events: connected.events, clock: systemClock, log: startupNotes(notice) })
    return { services, close }
  } catch (err) {
    await close()
    throw err
  }
}
