import type { FastifyInstance } from 'fastify'
import { createBodyBudget } from '../common/body-budget.js'
import { validateConfig } from '../common/config.js'
import type { ListenerTimeouts } from '../common/listener-limits.js'
import type { UnreadBodyLimits } from '../common/unread-body.js'
import { createHttpApp } from '../common/http-app.js'
import { registerDocumentation, type DocumentationOptions } from '../common/openapi.js'
import { UpstreamMockOptionsSchema, type ValidUpstreamMockOptions } from './config.js'
import { echoRoutes } from './echo.js'
import { edgeBodyRoutes } from './edge-bodies.js'
import { edgeRoutes } from './edge-routes.js'
import { installGzipResponses } from './gzip.js'
import { installWebSocketEcho } from './websocket-echo.js'
import { installPrincipalEcho } from './principal.js'
import { registerResourceRoutes } from './resource-routes.js'
import { createResources } from './resources.js'

/** Largest request body: a generous JSON record, nothing more. */
const BODY_LIMIT_BYTES = 1_048_576

const DOCUMENTATION: DocumentationOptions = {
  title: 'Portier upstream-mock',
  description: 'A back-office service for demos and tests: users, tasks and meetings in snake_case JSON, ' +
    'and debugging routes. It trusts whoever reaches it (the gateway) and echoes the principal it was sent ' +
    '(`x-portier-principal`, `x-portier-permissions`).',
  tags: [
    { name: 'users' }, { name: 'tasks' }, { name: 'meetings' },
    { name: 'debugging', description: 'What the gateway forwarded, and answers a well-behaved service never gives.' },
    { name: 'health' }
  ]
}

export interface UpstreamMockOptions {
  /** Seeded users, 10..100 000 (default 100); tasks are 2×, meetings ½× (at least 1). */
  users?: number
  /** PRNG seed of the data (default DEFAULT_SEED): same seed and size, byte-identical bodies. */
  seed?: number
  /** pino level (default `info`). */
  logLevel?: string
  /** Log destination (tests read it); stdout by default. */
  logStream?: NodeJS.WritableStream
  /** Header, request and keep-alive timeouts of its listener (default DEFAULT_LISTENER_TIMEOUTS). */
  timeouts?: ListenerTimeouts
  /** Request body bytes held at once across requests in flight (default 16 MiB). */
  bufferedBodiesMaxBytes?: number
  /** What the listener does with a request body it answers without reading (default DEFAULT_UNREAD_BODY_LIMITS). */
  unreadBodies?: UnreadBodyLimits
}

/**
 * Builds the back-office mock: users, tasks and meetings in snake_case JSON, the
 * echo route and the edge-case routes. Nothing listens yet. Data written through
 * the API lives in memory until the instance is closed. Throws a ConfigError on
 * invalid options.
 */
export async function buildUpstreamMock (options: UpstreamMockOptions = {}): Promise<FastifyInstance> {
  const { users, seed, logLevel } = validateConfig<ValidUpstreamMockOptions>(UpstreamMockOptionsSchema,
    { users: options.users, seed: options.seed, logLevel: options.logLevel }, 'upstream-mock options', 'options.')
  const app = createHttpApp({
    name: 'upstream-mock',
    logLevel,
    bodyLimitBytes: BODY_LIMIT_BYTES,
    ...(options.logStream !== undefined ? { logStream: options.logStream } : {}),
    ...(options.timeouts !== undefined ? { timeouts: options.timeouts } : {}),
    ...(options.unreadBodies !== undefined ? { unreadBodies: options.unreadBodies } : {}),
    ...(options.bufferedBodiesMaxBytes !== undefined ? { bodyBudget: createBodyBudget(options.bufferedBodiesMaxBytes) } : {})
  })
  installPrincipalEcho(app as unknown as FastifyInstance)
  installGzipResponses(app as unknown as FastifyInstance)
  installWebSocketEcho(app as unknown as FastifyInstance)
  // Before the routes: it collects them as they are added.
  await registerDocumentation(app as unknown as FastifyInstance, DOCUMENTATION)

  const resources = createResources(users, seed)
  registerResourceRoutes(app, resources.users)
  registerResourceRoutes(app, resources.tasks)
  registerResourceRoutes(app, resources.meetings)
  await app.register(echoRoutes)
  await app.register(edgeRoutes, { users: resources.users.store })
  await app.register(edgeBodyRoutes)
  return app as unknown as FastifyInstance
}
