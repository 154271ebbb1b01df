import { hkdfSync } from 'node:crypto'
import { watch, type FSWatcher } from 'node:fs'
import { basename, dirname, resolve } from 'node:path'
import { Cluster } from 'ioredis'
import type { FastifyBaseLogger } from 'fastify'
import { ConfigError } from '../common/config.js'
import { createMemoryEventBus, createRedisEventBus, type EventBus } from '../common/event-bus.js'
import { createRedis, type RedisClient } from '../common/redis.js'
import { createAccessTokenVerifier } from './auth/access-token-verifier.js'
import { createApiKeyVerifier } from './auth/api-key-verifier.js'
import { createAuthenticator } from './auth/authenticate.js'
import { createIdentityClient } from './auth/identity-client.js'
import { subscribeToInvalidations } from './auth/invalidation.js'
import { createJwksCache } from './auth/jwks-cache.js'
import { createTokenRevocations } from './auth/token-revocations.js'
import { createGatewayMetrics } from './observability/metrics.js'
import { redisTargetOf, type ResolvedGatewayOptions } from './options.js'
import { createRequestGate } from './request-gate.js'
import { buildRouteTable, loadUpstreamsFile, parseUpstreams, type RouteTable, type UpstreamsConfig } from './routing/index.js'

export interface RuntimeDependencies {
  /** An event bus to share (the one-process demo passes identity's in-memory bus). */
  events?: EventBus
  /** A Redis connection (or cluster client) to use instead of opening one from redisUrl / redisClusterNodes. */
  redis?: RedisClient
  now?: () => number
}

const FILE_CHANGE_DEBOUNCE_MS = 100

/**
 * Everything a gateway instance holds: the route table (swapped whole on reload, so
 * in-flight requests finish on the table they started with), the verifiers and
 * their caches, the event subscription, and the timers that keep revocations in step.
 */
export function createGatewayRuntime (options: ResolvedGatewayOptions, deps: RuntimeDependencies, log: FastifyBaseLogger) {
  const identityOrigin = new URL(options.identity.publicUrl).origin
  // Before anything that opens a connection: a bad upstreams file must fail the start
  // without leaving a Redis client reconnecting forever in the host process.
  let table: RouteTable = buildRouteTable(loadConfig(), { identityOrigin })
  const metrics = createGatewayMetrics()
  const redisTarget = redisTargetOf(options).target
  const ownsRedis = deps.redis === undefined && redisTarget !== undefined
  const redis: RedisClient | null = deps.redis ?? (redisTarget !== undefined ? createRedis(redisTarget) : null)
  // ioredis emits 'error' on every failed reconnect; the state is reported by /readyz, not thrown.
  redis?.on('error', (err: Error) => { log.debug({ err }, 'redis connection error') })
  const ownsEvents = deps.events === undefined
  const events = deps.events ?? (redis !== null
    ? createRedisEventBus({ redis, channel: options.eventsChannel, log })
    : createMemoryEventBus())
  const identity = createIdentityClient({ ...options.identity, log })
  const now = deps.now ?? Date.now

  const keys = createApiKeyVerifier({
    identity,
    redis,
    // Derived from the service credential every replica shares, so replicas share L2 entries without another secret.
    hmacKey: Buffer.from(hkdfSync('sha256', options.identity.serviceToken, 'portier-gateway', 'api-key-cache', 32)),
    l1MaxEntries: options.keyCache.l1MaxEntries,
    l1TtlMs: options.keyCache.l1TtlSeconds * 1000,
    l2TtlMs: options.keyCache.l2TtlSeconds * 1000,
    negativeTtlMs: options.keyCache.negativeTtlSeconds * 1000,
    metrics,
    log,
    now
  })
  const jwks = createJwksCache({ identity, cooldownMs: options.jwksCooldownSeconds * 1000, log, now })
  const revocations = createTokenRevocations({ identity, redis, log, now })
  const tokens = createAccessTokenVerifier({
    jwks, revocations, issuer: options.identity.issuer, audience: options.identity.audience, cacheMaxEntries: options.tokenCacheMaxEntries, now
  })
  const authenticate = createAuthenticator({ keys, tokens, metrics })

  function loadConfig (): UpstreamsConfig {
    if (options.upstreamsFile !== undefined) {
      const loaded = loadUpstreamsFile(options.upstreamsFile)
      for (const warning of loaded.warnings) log.warn({ file: options.upstreamsFile }, warning)
      return loaded.config
    }
    const loaded = parseUpstreams(JSON.stringify(options.upstreams), 'plugin option upstreams', 'json')
    for (const warning of loaded.warnings) log.warn(warning)
    return loaded.config
  }

  const gate = createRequestGate({ table: () => table, authenticate })

  const timers: NodeJS.Timeout[] = []
  let unsubscribe: (() => Promise<void>) | null = null
  let watcher: FSWatcher | null = null
  let redisWasDown = false

  /** A cluster client stays 'ready' while one of the masters is dead: the cluster itself knows (one bounded command). */
  async function clusterWhole (): Promise<boolean> {
    if (!(redis instanceof Cluster)) return true
    try {
      return /cluster_state:ok/.test(await redis.cluster('INFO'))
    } catch {
      return false
    }
  }

  function connectTimeoutMs (origin: string): number {
    const upstream = table.upstreams.find((u) => u.origin === origin)
    return upstream?.timeouts.connectMs ?? 2_000
  }

  /** Reads the upstreams again; an invalid config is logged and the current one stays. */
  function reload (): boolean {
    try {
      table = buildRouteTable(loadConfig(), { identityOrigin })
      log.info({ upstreams: table.upstreams.length, routes: table.routeCount }, 'upstreams reloaded')
      return true
    } catch (err) {
      const problems = err instanceof ConfigError ? err.problems : [(err as Error).message]
      log.error({ problems }, 'upstreams reload rejected; the previous config stays in force')
      return false
    }
  }

  function watchFile (file: string): void {
    let debounce: NodeJS.Timeout | undefined
    // The folder, not the file: editors replace files by rename, which a file watch loses.
    watcher = watch(dirname(resolve(file)), (_event, name) => {
      if (name !== basename(file)) return
      clearTimeout(debounce)
      debounce = setTimeout(reload, FILE_CHANGE_DEBOUNCE_MS)
    })
    watcher.on('error', (err) => { log.warn({ err }, 'upstreams file watch failed; SIGHUP still reloads') })
  }

  return {
    metrics,
    /** Whether /metrics is served on the app the plugin is registered on (behind its token): the OpenAPI document lists it then. */
    metricsRoute: options.metricsRoute,
    gate,
    reload,
    get table (): RouteTable { return table },
    connectTimeoutMs,
    keys,
    jwks,
    revocations,

    /** Subscribes, loads keys and revocations, and starts the timers. Never throws: what fails is retried. */
    async start (): Promise<void> {
      const targets = { keys, revocations, jwks, metrics, log }
      // Events published while either connection was away were lost: re-read what they would have said.
      const catchUp = (what: string): void => {
        log.info(`${what}: re-reading revocations and dropping L2 key entries that may have missed evictions`)
        void revocations.sync()
        keys.setAsideL2()
      }
      // With Redis down the subscription completes when it comes back; start does not wait for that.
      const subscribed = subscribeToInvalidations(events, targets, () => { catchUp('invalidation events are heard again') })
        .then((stop) => { unsubscribe = stop })
      await Promise.race([subscribed, new Promise((resolve) => setTimeout(resolve, options.identity.timeoutMs).unref())])
      redis?.on('close', () => { redisWasDown = true })
      redis?.on('ready', () => {
        if (!redisWasDown) return
        redisWasDown = false
        catchUp('redis is back')
      })
      await Promise.all([jwks.refresh(), revocations.sync()])
      timers.push(setInterval(() => { void revocations.sync() }, options.revocationSyncSeconds * 1000).unref())
      timers.push(setInterval(() => { void revocations.prune() }, 60_000).unref())
      if (options.watchUpstreamsFile && options.upstreamsFile !== undefined) watchFile(options.upstreamsFile)
    },

    /** What /readyz reports. Ready means it can verify tokens; Redis or identity down is "degraded". */
    async readiness () {
      const identityUp = await identity.healthy()
      // Up means usable for both jobs: the L2 cache (a cluster with a dead master is not), and hearing invalidation events.
      const redisState = redis === null ? 'not_configured' : keys.l2InUse && events.receiving() && await clusterWhole() ? 'up' : 'down'
      const degraded = !identityUp || redisState === 'down'
      return {
        ready: jwks.loaded,
        status: !jwks.loaded ? 'not_ready' : degraded ? 'degraded' : 'ready',
        checks: {
          config: { routes: table.routeCount, upstreams: table.upstreams.length },
          redis: redisState,
          identity: identityUp ? 'up' : 'down',
          jwks: jwks.loaded ? 'loaded' : 'not_loaded'
        }
      }
    },

    async close (): Promise<void> {
      for (const timer of timers) clearInterval(timer)
      watcher?.close()
      await unsubscribe?.()
      if (ownsEvents) await events.close()
      keys.close()
      if (ownsRedis) redis?.disconnect()
      await identity.close()
    }
  }
}

export type GatewayRuntime = ReturnType<typeof createGatewayRuntime>
