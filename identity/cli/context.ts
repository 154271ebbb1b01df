import type { Command } from 'commander'
import type { FastifyBaseLogger } from 'fastify'
import { pino } from 'pino'
import { Writable } from 'node:stream'
import { createRedisEventBus, type EventBus } from '../../common/event-bus.js'
import { REDACTED_PATHS } from '../../common/logger.js'
import { createRedis, waitForRedis, type RedisClient } from '../../common/redis.js'
import { warn, type CliIo } from '../../cli/io.js'
import { formatAnswer, type Answer, type OutputFormat } from '../../cli/output.js'
import { loadIdentityCliConfig, type IdentityCoreConfig } from '../config.js'
import { systemClock } from '../services/clock.js'
import { createIdentityServices, type IdentityServices, type ServicesLog } from '../services/index.js'
import { createOutboxEventBus, type OutboxEventBus } from '../services/outbox-event-bus.js'
import { openDatabase } from '../store/database.js'
import { createOutboxStore } from '../store/outbox-store.js'

/** How long a command waits for Redis before going on without it (as the server at start). */
const REDIS_WAIT_MS = 2_000
/** PUBLISH has been answered by the time the CLI closes, so there is nothing left to wait for. */
const REDIS_DISCONNECT_TIMEOUT_MS = 100
/**
 * Without Redis, how long a command that changed something waits for the identity
 * server to relay its events before saying that none did: the propagation bound.
 */
const RELAY_WAIT_MS = 1_000

/** What a command's body receives. */
export interface CommandRun<O> {
  /** Positional arguments, in order. */
  args: string[]
  options: O
  io: CliIo
  /**
   * Opens the configuration, the database, Redis and the services: called after the
   * input has been checked, so bad usage touches nothing.
   */
  services: () => Promise<IdentityServices>
}

export type CommandBody<O> = (run: CommandRun<O>) => Promise<Answer>

/**
 * Where the CLI publishes directly, besides the outbox: Redis when configured, so that
 * gateways hear a change even while identity is down; nowhere otherwise (the identity
 * server relays the outbox on its in-process bus).
 */
async function connectEvents (config: IdentityCoreConfig, io: CliIo): Promise<{ events: EventBus, redis: RedisClient | null }> {
  if (config.redis === undefined) {
    const events: EventBus = {
      async publish () {},
      async subscribe () { return async () => {} },
      receiving: () => false,
      async close () {}
    }
    return { events, redis: null }
  }
  // ioredis waits up to 2 s (its default) for a socket that never connected to close: the CLI should just exit.
  const redis = createRedis(config.redis, { disconnectTimeout: REDIS_DISCONNECT_TIMEOUT_MS })
  let lastError = ''
  // ioredis retries in the background; one summary below is enough (the URL may hold a password: never shown).
  redis.on('error', (err: Error) => { lastError = err.message })
  if (!await waitForRedis(redis, REDIS_WAIT_MS)) {
    warn(io, `Redis (${config.redis.mode === 'cluster' ? 'REDIS_CLUSTER_NODES' : 'REDIS_URL'}) is not reachable${lastError !== '' ? ` (${lastError})` : ''}: gateways hear of changes only when identity relays them (if it reaches Redis), else when their caches expire`)
  }
  return { events: createRedisEventBus({ redis, channel: config.eventsChannel, log: stderrLogger(io) }), redis }
}

/** The event bus logs with pino; on a terminal its warnings read as one plain line each. */
function stderrLogger (io: CliIo): FastifyBaseLogger {
  const lines = new Writable({
    write (chunk: Buffer, _encoding, done) {
      const entry = JSON.parse(chunk.toString()) as { msg?: string, eventType?: string }
      warn(io, `${entry.msg ?? 'unknown problem'}${entry.eventType !== undefined ? ` (${entry.eventType})` : ''}`)
      done()
    }
  })
  return pino({ level: 'warn', base: null, redact: { paths: REDACTED_PATHS, censor: '[redacted]' } }, lines)
}

/**
 * Start-up notes on stderr: a change the CLI made to stored keys on its own (their
 * encryption at rest) is shown; the "stored unencrypted" warning is the server's,
 * at each of its starts, and would only repeat on every command here.
 */
function startupNotes (io: CliIo): ServicesLog {
  return {
    info: (fields, msg) => warn(io, `${msg}${typeof fields.count === 'number' ? ` (${fields.count})` : ''}`),
    warn: () => {}
  }
}

interface OpenIdentity { services: IdentityServices, close: () => Promise<void> }

/** Without a direct path to the gateways, says when no identity server relayed this command's events in time. */
async function confirmRelayed (events: OutboxEventBus, io: CliIo): Promise<void> {
  if (!events.wrote() || await events.relayed(RELAY_WAIT_MS)) return
  warn(io, `the change is saved, but no identity server relayed it to the gateways within ${RELAY_WAIT_MS / 1000} s ` +
    '(is Portier running, on this IDENTITY_DATABASE_PATH?): identity relays it when it next starts; ' +
    'until then a gateway keeps what it has cached until its cache TTL')
}

/**
 * The same database, services and event channel as the server, without its HTTP
 * credentials. The database must exist: the CLI never creates one.
 */
async function openIdentity (io: CliIo): Promise<OpenIdentity> {
  const config = loadIdentityCliConfig(io.env)
  const db = openDatabase(config.databasePath, { create: false })
  const outbox = createOutboxStore(db)
  let connected: { events: OutboxEventBus, redis: RedisClient | null } | null = null
  const close = async (): Promise<void> => {
    if (connected !== null) {
      if (connected.redis === null) await confirmRelayed(connected.events, io)
      await connected.events.close()
      connected.redis?.disconnect()
    }
    db.close()
  }
  try {
    const direct = await connectEvents(config, io)
    // Every event also goes to the outbox, for the identity server to relay on its own bus.
    connected = { events: createOutboxEventBus({ store: outbox, clock: systemClock, direct: direct.events }), redis: direct.redis }
    const services = await createIdentityServices(config, { db, events: connected.events, clock: systemClock, log: startupNotes(io) })
    return { services, close }
  } catch (err) {
    await close()
    throw err
  }
}

/**
 * Turns a command body into a commander action: the body checks its input, opens the
 * services when it needs them, and returns the answer, printed in the chosen format.
 * Whatever happens, the database and Redis are closed so that the process can exit.
 */
export function identityAction<O> (io: CliIo, body: CommandBody<O>): (...args: unknown[]) => Promise<void> {
  return async (...actionArgs) => {
    const command = actionArgs[actionArgs.length - 1] as Command
    const { format } = command.optsWithGlobals<{ format: OutputFormat }>()
    let opened: OpenIdentity | null = null
    try {
      const answer = await body({
        args: command.processedArgs as string[],
        options: command.opts() as O,
        io,
        services: async () => {
          opened ??= await openIdentity(io)
          return opened.services
        }
      })
      io.stdout.write(formatAnswer(answer, format))
    } finally {
      // `opened` is assigned inside the callback above, which TypeScript cannot follow.
      await (opened as OpenIdentity | null)?.close()
    }
  }
}
