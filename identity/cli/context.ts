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
import { withStoredEncryptionKey } from '../store/credentials-file.js'
import { openDatabase } from '../store/database.js'

/** How long a command waits for Redis before going on without it (as the server at start). */
const REDIS_WAIT_MS = 2_000
/** PUBLISH has been answered by the time the CLI closes, so there is nothing left to wait for. */
const REDIS_DISCONNECT_TIMEOUT_MS = 100

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

/** Invalidation events for the CLI: gateways hear them only through Redis. */
async function connectEvents (config: IdentityCoreConfig, io: CliIo): Promise<{ events: EventBus, redis: RedisClient | null }> {
  if (config.redis === undefined) {
    let warned = false
    const events: EventBus = {
      async publish () {
        if (!warned) warn(io, 'REDIS_URL is not set: gateways are not told of this change and notice it when their caches expire')
        warned = true
      },
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
    warn(io, `Redis (${config.redis.mode === 'cluster' ? 'REDIS_CLUSTER_NODES' : 'REDIS_URL'}) is not reachable${lastError !== '' ? ` (${lastError})` : ''}: invalidation events are lost; gateways notice changes when their caches expire`)
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

/** The same database, services and event channel as the server, without its HTTP credentials. */
async function openIdentity (io: CliIo): Promise<OpenIdentity> {
  // Beside an npm start database, its credentials file holds the signing keys' encryption key.
  const config = loadIdentityCliConfig(withStoredEncryptionKey(io.env))
  const db = openDatabase(config.databasePath)
  let connected: { events: EventBus, redis: RedisClient | null } | null = null
  const close = async (): Promise<void> => {
    if (connected !== null) {
      await connected.events.close()
      connected.redis?.disconnect()
    }
    db.close()
  }
  try {
    connected = await connectEvents(config, io)
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
