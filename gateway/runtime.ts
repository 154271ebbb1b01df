import { hkdfSync } from 'node:crypto'
import type { FastifyBaseLogger } from 'fastify'
import { createMemoryEventBus, createRedisEventBus, type EventBus } from '../common/event-bus.js'
import type { RedisClient } from '../common/redis.js'
import { createAccessTokenVerifier } from './auth/access-token-verifier.js'
import { createApiKeyVerifier } from './auth/api-key-verifier.js'
import { createAuthenticator } from './auth/authenticate.js'
import { createRouteStage } from './routing/route-request.js'
import { createOpenSockets } from './websocket/open-sockets.js'
import { createIdentityClient } from './auth/identity-client.js'
import { createCacheUpkeep } from './auth/invalidation.js'
import { createJwksCache } from './auth/jwks-cache.js'
import { createNoKeyCacheL2, createRedisKeyCacheL2, type KeyCacheL2 } from './auth/key-cache-l2.js'
import { createMemoryRevocationShare, createRedisRevocationShare, type RevocationShare } from './auth/revocation-share.js'
import { createTokenRevocations } from './auth/token-revocations.js'
import { createGatewayMetrics } from './observability/metrics.js'
import { createRequestTracing } from './observability/request-tracing.js'
import type { TracingConfig } from '../common/tracing/config.js'
import { startTracing } from '../common/tracing/tracing.js'
import { countDropsOn } from '../common/tracing/drops-metric.js'
import { createReadiness, type RedisState } from './observability/readiness.js'
import { redisTargetOf, type ResolvedGatewayOptions } from './options.js'
import { connectGatewayRedis, type GatewayRedis } from './redis-connection.js'
import { createLiveRouteTable } from './routing/live-table.js'
import type { RouteTable } from './routing/index.js'
import { createLocalCounters } from '../common/traffic/local-counters.js'
import { createRedisCounters } from '../common/traffic/redis-counters.js'
import { createQuotaLedger } from './traffic/quota-ledger.js'
import { createTrafficControl } from './traffic/traffic-control.js'
import { createUsageCounter } from './usage/usage-counter.js'
import { createUsageReporter } from './usage/usage-reporter.js'

export interface RuntimeDependencies {
  /** An event bus to share (the one-process demo passes identity's in-memory bus). */
  events?: EventBus
  /** A Redis connection (or cluster client) to use instead of opening one from redisUrl / redisClusterNodes. */
  redis?: RedisClient
  now?: () => number
  /** OpenTelemetry tracing (common/tracing/config.ts); absent or null: off, nothing started. */
  tracing?: TracingConfig | null
}

/** What the replicas share through Redis, or what stands in for it in a gateway on its own. */
interface Sharing {
  l2: KeyCacheL2
  revocationShare: RevocationShare
  createEvents: () => EventBus
  /** Up means usable for both jobs: the L2 cache (a cluster with a dead master is not), and hearing invalidation events. */
  redisState: (events: EventBus) => Promise<RedisState>
  onRedisBack: (listener: () => void) => void
}

function sharingOf (redis: GatewayRedis | null, options: ResolvedGatewayOptions, log: FastifyBaseLogger, now: () => number): Sharing {
  if (redis === null) {
    return {
      l2: createNoKeyCacheL2(),
      revocationShare: createMemoryRevocationShare(),
      createEvents: createMemoryEventBus,
      redisState: async () => 'not_configured',
      onRedisBack: () => {}
    }
  }
  const l2 = createRedisKeyCacheL2({ redis: redis.client, l2TtlMs: options.keyCache.l2TtlSeconds * 1000, log, now })
  return {
    l2,
    revocationShare: createRedisRevocationShare({ redis: redis.client, log }),
    createEvents: () => createRedisEventBus({ redis: redis.client, channel: options.eventsChannel, log }),
    redisState: async (events) => l2.inUse && events.receiving() && await redis.whole() ? 'up' : 'down',
    onRedisBack: redis.onReturn
  }
}

/**
 * Everything a gateway instance holds, wired: the route table in force, the verifiers
 * and their caches, what keeps them in step with identity, and readiness.
 */
export function createGatewayRuntime (options: ResolvedGatewayOptions, deps: RuntimeDependencies, log: FastifyBaseLogger) {
  const identityOrigin = new URL(options.identity.publicUrl).origin
  // Before anything that opens a connection: a bad upstreams file must fail the start
  // without leaving a Redis client reconnecting forever in the host process.
  const routes = createLiveRouteTable({
    source: options.upstreamsFile !== undefined ? { file: options.upstreamsFile } : { config: options.upstreams },
    identityOrigin,
    ...(options.consoleUrl !== undefined ? { consoleOrigin: new URL(options.consoleUrl).origin } : {}),
    log
  })
  const metrics = createGatewayMetrics()
  const tracing = deps.tracing == null
    ? null
    : startTracing(deps.tracing, countDropsOn(metrics.tracingSpansDropped))
  const now = deps.now ?? Date.now
  const redis = connectGatewayRedis(redisTargetOf(options).target, deps.redis, log)
  const sharing = sharingOf(redis, options, log, now)
  const ownsEvents = deps.events === undefined
  const events = deps.events ?? sharing.createEvents()
  const identity = createIdentityClient({ ...options.identity, log })

  const keys = createApiKeyVerifier({
    identity,
    l2: sharing.l2,
    // Derived from the service credential every replica shares, so replicas share L2 entries without another secret.
    hmacKey: Buffer.from(hkdfSync('sha256', options.identity.serviceToken, 'portier-gateway', 'api-key-cache', 32)),
    l1MaxEntries: options.keyCache.l1MaxEntries,
    l1TtlMs: options.keyCache.l1TtlSeconds * 1000,
    l2TtlMs: options.keyCache.l2TtlSeconds * 1000,
    negativeTtlMs: options.keyCache.negativeTtlSeconds * 1000,
    metrics,
    now
  })
  const jwks = createJwksCache({ identity, cooldownMs: options.jwksCooldownSeconds * 1000, log, now })
  const revocations = createTokenRevocations({ identity, share: sharing.revocationShare, log, now })
  const tokens = createAccessTokenVerifier({
    jwks, revocations, issuer: options.identity.issuer, audience: options.identity.audience, cacheMaxEntries: options.tokenCacheMaxEntries, now
  })
  // The path counts every request it lets through with a key, cached or not; the reporter sends the counts to identity in batches.
  const usage = createUsageCounter({ maxKeys: options.keyUsageMaxKeys, now })
  const usageReporter = createUsageReporter({
    counter: usage, identity, intervalMs: options.keyUsageFlushSeconds * 1000, maxKeys: options.keyUsageMaxKeys, metrics, log
  })
  // Counts in Redis when the replicas share one, else here; this process's own are also the fail-open fallback.
  const localCounters = createLocalCounters({ now, maxBytes: options.trafficCountersMaxBytes })
  const quotaLedger = createQuotaLedger({ identity, intervalMs: options.keyUsageFlushSeconds * 1000, maxPending: options.keyUsageMaxKeys, log })
  const traffic = createTrafficControl({
    counters: redis !== null ? createRedisCounters(redis.client, { batches: true }) : localCounters,
    local: localCounters,
    ledger: quotaLedger,
    anonymous: options.anonymousPolicies.map((policy) => ({ scope: 'anonymous', policy })),
    legacyHeaders: options.legacyRateLimitHeaders,
    metrics,
    log,
    now
  })
  const authenticate = createAuthenticator({ keys, tokens, metrics })
  const openSockets = createOpenSockets({ authenticate, log })
  const upkeep = createCacheUpkeep({
    events,
    keys,
    revocations,
    jwks,
    l2: sharing.l2,
    metrics,
    log,
    onRedisBack: sharing.onRedisBack,
    subscribeWaitMs: options.identity.timeoutMs,
    revocationSyncMs: options.revocationSyncSeconds * 1000,
    // Open WebSockets are checked again once the caches have applied an event, and on each sync.
    afterEvent: openSockets.afterEvent,
    afterSync: openSockets.recheckAll
  })
  let closing = false

  return {
    metrics,
    /** Whether /metrics is served on the app the plugin is registered on (behind its token): the OpenAPI document lists it then. */
    metricsRoute: options.metricsRoute,
    route: createRouteStage({ table: () => routes.table, publicHosts: options.publicHosts === undefined ? null : new Set(options.publicHosts.map((host) => host.toLowerCase())) }),
    authenticate,
    traffic,
    usage,
    openSockets,
    /** One request's spans, or null when tracing is off. */
    tracing: createRequestTracing(tracing),
    reload: routes.reload,
    get table (): RouteTable { return routes.table },
    poolSettings: routes.poolSettings,
    /** Whether the gateway is draining: new requests get a 503 and every answer closes its connection. */
    get closing (): boolean { return closing },
    readiness: createReadiness({
      table: () => routes.table,
      identityUp: async () => await identity.healthy(),
      jwksLoaded: () => jwks.loaded,
      redis: async () => await sharing.redisState(events)
    }),

    /** Subscribes, loads keys and revocations, starts the timers and the file watch. Never throws: what fails is retried. */
    async start (): Promise<void> {
      await upkeep.start()
      usageReporter.start()
      quotaLedger.start()
      if (options.watchUpstreamsFile) routes.watch()
    },

    /** The host is closing: from now on the gateway drains. */
    drain (): void {
      closing = true
    },

    async close (): Promise<void> {
      closing = true
      await upkeep.stop()
      routes.close()
      if (ownsEvents) await events.close()
      sharing.l2.close()
      redis?.close()
      // Before the identity client closes: the uses counted since the last report go now.
      await usageReporter.close()
      await quotaLedger.close()
      await identity.close()
      // Last: the requests drained before this, and their spans go now.
      await tracing?.shutdown()
    }
  }
}

export type GatewayRuntime = ReturnType<typeof createGatewayRuntime>
