import type { FastifyInstance } from 'fastify'
import { createBodyBudget } from '../common/body-budget.js'
import { createMemoryEventBus, createRedisEventBus, type EventBus } from '../common/event-bus.js'
import { createHttpApp } from '../common/http-app.js'
import { registerDocumentation } from '../common/openapi.js'
import { createRedis, waitForRedis, type RedisClient } from '../common/redis.js'
import type { IdentityConfig } from './config.js'
import { createIdentityMetrics } from './observability/metrics.js'
import { traceRequests } from './observability/request-tracing.js'
import { startTracing } from '../common/tracing/tracing.js'
import { countDropsOn } from '../common/tracing/drops-metric.js'
import { trustEveryoneWarning, warnOnUntrustedForwarding } from './observability/untrusted-forwarding.js'
import { IDENTITY_ADMIN_DOCUMENTATION, IDENTITY_PUBLIC_DOCUMENTATION, PUBLIC_ROUTE_PLUGINS } from './openapi.js'
import { bindAuditContext } from './routes/audit-context.js'
import { guardAdminListener } from './routes/admin/credential-guard.js'
import { adminApiKeyRoutes } from './routes/admin/api-keys.js'
import { adminAuditRoutes } from './routes/admin/audit.js'
import { adminKeyUsageRoutes } from './routes/admin/key-usage.js'
import { metricsRoutes } from './routes/admin/metrics.js'
import { adminRoleRoutes } from './routes/admin/roles.js'
import { adminSessionRoutes } from './routes/admin/sessions.js'
import { adminSigningKeyRoutes } from './routes/admin/signing-keys.js'
import { adminUserRoutes } from './routes/admin/users.js'
import { keysUsageRoutes } from './routes/internal/keys-usage.js'
import { keysVerifyRoutes } from './routes/internal/keys-verify.js'
import { quotasUsageRoutes } from './routes/internal/quotas-usage.js'
import { sessionsRevokedRoutes } from './routes/internal/sessions-revoked.js'
import { healthRoutes } from './routes/health.js'
import { systemClock, type Clock } from './services/clock.js'
import { createIdentityServices, type IdentityServices } from './services/index.js'
import { startOutboxRelay } from './services/outbox-relay.js'
import { startAuditRetention } from './services/audit-retention.js'
import { openDatabase } from './store/database.js'
import type { Db } from './store/db.js'
import { describeDatabaseModes, inspectDatabaseModes } from './store/database-permissions.js'
import { createOutboxStore } from './store/outbox-store.js'

/** How long start-up waits for Redis before running degraded (events then get lost, login failures counted in process; logged). */
const REDIS_START_WAIT_MS = 2_000

export interface BuildIdentityOptions {
  /** Log destination (tests read it); stdout by default. */
  logStream?: NodeJS.WritableStream
  clock?: Clock
  /** An event bus to use instead of the one the config implies (the one-process demo shares one). */
  events?: EventBus
}

export interface Identity {
  /** Login, refresh, logout, JWKS: what the gateway routes to. */
  publicApp: FastifyInstance
  /** /admin/*, /internal/* and /metrics: never routed publicly. */
  adminApp: FastifyInstance
  services: IdentityServices
  db: Db
  close: () => Promise<void>
}

async function connectEvents (config: IdentityConfig, log: FastifyInstance['log']): Promise<{ events: EventBus, redis: RedisClient | null }> {
  if (config.redis === undefined) {
    log.warn('REDIS_URL is not set: invalidation events stay in this process')
    return { events: createMemoryEventBus(), redis: null }
  }
  const redis = createRedis(config.redis)
  redis.on('error', (err) => log.warn({ err: { message: err.message } }, 'redis connection error'))
  if (!await waitForRedis(redis, REDIS_START_WAIT_MS)) log.warn('Redis is not reachable yet; events are lost until it is')
  return { events: createRedisEventBus({ redis, channel: config.eventsChannel, log }), redis }
}

/**
 * With a bus handed in (the one-process demo's) but Redis configured, the login throttle
 * still counts failures in Redis: a connection of its own.
 */
async function connectCounters (config: IdentityConfig, log: FastifyInstance['log']): Promise<RedisClient | null> {
  if (config.redis === undefined) return null
  const redis = createRedis(config.redis)
  redis.on('error', (err) => log.warn({ err: { message: err.message } }, 'redis connection error'))
  if (!await waitForRedis(redis, REDIS_START_WAIT_MS)) log.warn('Redis is not reachable yet; login failures are counted in this process until it is')
  return redis
}

/**
 * Builds identity's two HTTP apps over one database and one set of services.
 * Nothing listens yet: the server (or a test) decides where.
 */
export async function buildIdentity (config: IdentityConfig, options: BuildIdentityOptions = {}): Promise<Identity> {
  const common = {
    logLevel: config.logLevel,
    trustProxy: config.trustProxy,
    timeouts: config.timeouts,
    unreadBodies: config.unreadBodies,
    // One budget for both listeners: the process's memory is what it bounds.
    bodyBudget: createBodyBudget(config.bufferedBodiesMaxBytes),
    ...(options.logStream !== undefined ? { logStream: options.logStream } : {})
  }
  // Login, refresh and logout bodies are a few hundred bytes: an anonymous client gets no more room than that.
  const publicApp = createHttpApp({ ...common, name: 'identity', bodyLimitBytes: config.publicBodyLimitBytes })
  const adminApp = createHttpApp({ ...common, name: 'identity-admin', bodyLimitBytes: config.bodyLimitBytes })
  // The public listener is what gateways forward to: say when their client addresses are ignored.
  warnOnUntrustedForwarding(publicApp as unknown as FastifyInstance, config.trustProxy)
  const trustWarning = trustEveryoneWarning(config.trustProxy)
  if (trustWarning !== null) publicApp.log.warn(trustWarning)

  const modesBefore = inspectDatabaseModes(config.databasePath)
  const db = openDatabase(config.databasePath)
  const modes = describeDatabaseModes(config.databasePath, modesBefore)
  for (const line of modes.info) publicApp.log.info(line)
  for (const line of modes.warn) publicApp.log.warn(line)
  const { events, redis } = options.events !== undefined
    ? { events: options.events, redis: await connectCounters(config, publicApp.log) }
    : await connectEvents(config, publicApp.log)
  const metrics = createIdentityMetrics()
  let services: IdentityServices
  try {
    services = await createIdentityServices(config, { db, events, clock: options.clock ?? systemClock, metrics, log: publicApp.log, redis })
  } catch (err) {
    // A refusal at start (e.g. signing keys the configured secret cannot open) must not leave the file or Redis open.
    if (options.events === undefined) await events.close()
    if (redis !== null) redis.disconnect()
    db.close()
    await Promise.all([publicApp.close(), adminApp.close()])
    throw err
  }

  const tracing = config.tracing == null
    ? null
    : startTracing(config.tracing, countDropsOn(metrics.tracingSpansDropped))
  if (tracing !== null) {
    // Before the routes: their hooks are the ones in place when they are added.
    traceRequests(publicApp as unknown as FastifyInstance, tracing)
    traceRequests(adminApp as unknown as FastifyInstance, tracing)
  }

  // Documentation first: it collects the routes registered after it.
  bindAuditContext(publicApp as unknown as FastifyInstance)
  bindAuditContext(adminApp as unknown as FastifyInstance)
  await registerDocumentation(publicApp as unknown as FastifyInstance, IDENTITY_PUBLIC_DOCUMENTATION)
  for (const routes of PUBLIC_ROUTE_PLUGINS) await publicApp.register(routes, { services })

  guardAdminListener(adminApp as unknown as FastifyInstance, config, services)
  await registerDocumentation(adminApp as unknown as FastifyInstance, IDENTITY_ADMIN_DOCUMENTATION)
  for (const routes of [adminUserRoutes, adminRoleRoutes, adminApiKeyRoutes, adminKeyUsageRoutes, adminSessionRoutes, adminSigningKeyRoutes, adminAuditRoutes,
    keysVerifyRoutes, keysUsageRoutes, quotasUsageRoutes, sessionsRevokedRoutes]) {
    await adminApp.register(routes, { services })
  }
  await adminApp.register(healthRoutes)
  // Admin listener only: the public one is what the gateway routes to.
  await adminApp.register(metricsRoutes, { metrics })

  // Changes the CLI made on this file reach the gateways through this process's bus.
  const relay = startOutboxRelay({ store: createOutboxStore(db), events, log: publicApp.log })
  const retention = startAuditRetention({ audit: services.audit, retentionDays: config.auditRetentionDays, log: publicApp.log })

  let closed = false
  return {
    publicApp: publicApp as unknown as FastifyInstance,
    adminApp: adminApp as unknown as FastifyInstance,
    services,
    db,
    async close () {
      if (closed) return
      closed = true
      retention.stop()
      // Stop taking requests and let in-flight ones finish, then release the database.
      await Promise.all([publicApp.close(), adminApp.close()])
      await relay.stop()
      if (options.events === undefined) await events.close()
      if (redis !== null) redis.disconnect()
      db.close()
      // Last: the requests drained before this, and their spans go now.
      await tracing?.shutdown()
    }
  }
}
