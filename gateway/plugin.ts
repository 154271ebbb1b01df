import fp from 'fastify-plugin'
import type { FastifyInstance, FastifyPluginAsync } from 'fastify'
import { ConfigError, validateConfig } from '../common/config.js'
import { installServiceHooks } from '../common/http-app.js'
import { createAccessLog } from '../common/logger.js'
import { installProblemErrorHandler } from '../common/problem.js'
import { DEFAULT_UNREAD_BODY_LIMITS, type UnreadBodyLimits } from '../common/unread-body.js'
import { documentationRoutes } from './docs/routes.js'
import { SpellingBook } from './inflection/index.js'
import { observabilityRoutes } from './observability/routes.js'
import { metricsRoute } from './observability/metrics-route.js'
import type { GatewayMetrics } from './observability/metrics.js'
import { createRequestCounter } from './observability/request-counter.js'
import { createUpstreamTimer } from './observability/upstream-timer.js'
import { GatewayOptionsSchema, metricsOptionProblems, publicHostProblems, redisTargetOf, type GatewayOptionsInput, type ResolvedGatewayOptions } from './options.js'
import { createForwardHeaders } from './proxy/forward-headers.js'
import { createProxyStage } from './proxy/forward.js'
import { createRequestBodyStage } from './proxy/request-body.js'
import { createUpstreamAgent } from './proxy/upstream-agent.js'
import { createFairShare } from './traffic/fair-share.js'
import { createRefusals } from './refusals.js'
import { createPreflightStage } from './cors/preflight.js'
import { createRequestPath } from './request-path.js'
import { HTTP_METHODS } from './routing/schema.js'
import { createGatewayRuntime, type GatewayRuntime, type RuntimeDependencies } from './runtime.js'
import { registerWebSocketProxy, type WebSocketStage } from './websocket/websocket-proxy.js'
import type { RouteTable } from './routing/index.js'
import { createVerifyDecision, type VerifyDecision } from './verify/decide.js'

export type GatewayPluginOptions = GatewayOptionsInput & RuntimeDependencies & {
  /** What becomes of request bodies the gateway answers without reading; the standalone server passes its listener's. */
  unreadBodies?: UnreadBodyLimits
}

/** What a host app reaches of the gateway registered on it (`app.portierGateway`). */
export interface PortierGateway {
  /** Reads the upstreams again (on the host's own signal): false when the new config is refused and the previous one stays. */
  reload: () => boolean
  /** The route table in force, and whether /metrics is served on the app: what `gatewayOpenApiDocument` documents. */
  readonly table: RouteTable
  readonly metricsRoute: boolean
  /** For a host that serves the metrics itself, where only its monitoring reaches them. */
  readonly metrics: Pick<GatewayMetrics, 'registry'>
  /** The request path's decision on a request described, not sent: what the verify API (verify/server.ts) answers. */
  readonly verify: VerifyDecision
}

declare module 'fastify' {
  interface FastifyInstance {
    /** The gateway registered on this app: reload its upstreams, document its routes, read its metrics. */
    portierGateway: PortierGateway
  }
}

const OPTIONS_SOURCE = 'portier gateway options'

function resolveOptions (options: GatewayOptionsInput): ResolvedGatewayOptions {
  // A copy: Ajv fills defaults in place, and the host's object is not ours to change.
  const raw = structuredClone({ ...options }) as Record<string, unknown>
  // validateConfig reads only the schema's members (environments hold other variables); options must hold nothing else.
  const unknown = Object.keys(raw).filter((name) => !(name in GatewayOptionsSchema.properties))
  if (unknown.length > 0) throw new ConfigError(OPTIONS_SOURCE, unknown.map((name) => `${name}: is not a known option`))
  const resolved = validateConfig<ResolvedGatewayOptions>(GatewayOptionsSchema, raw, OPTIONS_SOURCE)
  if ((resolved.upstreamsFile === undefined) === (resolved.upstreams === undefined)) {
    throw new ConfigError(OPTIONS_SOURCE, ['pass exactly one of upstreamsFile and upstreams'])
  }
  const problems = [...redisTargetOf(resolved).problems, ...metricsOptionProblems(resolved), ...publicHostProblems(resolved.publicHosts)]
  if (problems.length > 0) throw new ConfigError(OPTIONS_SOURCE, problems)
  return resolved
}

/**
 * The routes that carry traffic: one catch-all for every method, in an encapsulated
 * context of its own so that none of it touches the host app's routes, and with no hook
 * of the gateway's: the request path (request-path.ts) does everything a request needs,
 * in order, and writes every answer itself. Fastify is told to leave bodies alone: the
 * path reads one only once every check before it has passed.
 */
async function trafficContext (app: FastifyInstance, { runtime, options, unreadBodies }: { runtime: GatewayRuntime, options: ResolvedGatewayOptions, unreadBodies: UnreadBodyLimits }): Promise<void> {
  app.removeAllContentTypeParsers()
  app.addContentTypeParser('*', (_request, _payload, done) => { done(null) })
  // Only what escapes the path (nothing should) reaches Fastify's handler.
  installProblemErrorHandler(app)

  const spellings = new SpellingBook()
  const forwardHeaders = createForwardHeaders({ allowedUnusualHeaders: options.allowedUnusualHeaders })
  const { agent, dispatcher } = createUpstreamAgent(runtime.poolSettings)
  app.addHook('onClose', async () => { await agent.close() })
  // The path's last stage for a WebSocket route is the proxy registered after it, which runs the path first: bound once both exist.
  let websocket: WebSocketStage | null = null
  const serve = createRequestPath({
    route: runtime.route,
    authenticate: runtime.authenticate,
    traffic: runtime.traffic,
    usage: runtime.usage,
    body: createRequestBodyStage({
      bodyLimitBytes: options.bodyLimitBytes,
      identityBodyLimitBytes: options.identityBodyLimitBytes,
      bufferedBodiesMaxBytes: options.bufferedBodiesMaxBytes,
      spellings,
      maxInflectionDepth: options.maxInflectionDepth,
      maxInflectedRequestMembers: options.maxInflectedRequestMembers
    }),
    proxy: createProxyStage({
      dispatcher,
      forwardHeaders,
      spellings,
      maxInflectionDepth: options.maxInflectionDepth,
      maxInflectedResponseBytes: options.maxInflectedResponseBytes,
      inflectedResponseHoldBytes: options.inflectedResponseHoldBytes,
      maxInflectedResponseMembers: options.maxInflectedResponseMembers,
      upstreamTimer: createUpstreamTimer(runtime.metrics.upstreamDuration),
      fairShare: createFairShare(),
      log: app.log
    }),
    websocket: (forward, handOver) => {
      if (websocket === null) throw new Error('the WebSocket proxy is not registered yet')
      websocket(forward, handOver)
    },
    refusals: createRefusals({ spellings, unreadBodies }),
    preflight: createPreflightStage({ table: () => runtime.table, unreadBodies }),
    requests: createRequestCounter(runtime.metrics.requests, runtime.metrics.requestDuration),
    accessLog: createAccessLog(app.log),
    tracing: runtime.tracing,
    closing: () => runtime.closing
  })
  // A host app's own @fastify/swagger would list these catch-alls as operations; the
  // gateway documents its routes itself (gateway/docs/).
  websocket = await registerWebSocketProxy(app, {
    forwardHeaders,
    openSockets: runtime.openSockets,
    maxMessageBytes: options.webSocketMaxMessageBytes,
    idleMs: options.webSocketIdleSeconds * 1000,
    check: serve
  })
  for (const url of ['/', '/*']) app.route({ method: [...HTTP_METHODS], url, schema: { hide: true }, handler: (request, reply) => { serve(request, reply) } })
}

const gatewayPlugin: FastifyPluginAsync<GatewayPluginOptions> = async (app, pluginOptions) => {
  const { events, redis, now, tracing, unreadBodies, ...input } = pluginOptions
  const options = resolveOptions(input)
  const runtime = createGatewayRuntime(options, {
    ...(events !== undefined ? { events } : {}),
    ...(redis !== undefined ? { redis } : {}),
    ...(now !== undefined ? { now } : {}),
    ...(tracing !== undefined ? { tracing } : {})
  }, app.log)
  const gateway: PortierGateway = {
    reload: runtime.reload,
    get table (): RouteTable { return runtime.table },
    metricsRoute: runtime.metricsRoute,
    metrics: { registry: runtime.metrics.registry },
    verify: createVerifyDecision({ table: () => runtime.table, authenticate: runtime.authenticate, traffic: runtime.traffic, usage: runtime.usage, now: now ?? Date.now, tracing: runtime.tracing })
  }
  app.decorate('portierGateway', gateway)
  app.addHook('onReady', async () => { await runtime.start() })
  app.addHook('preClose', (done) => { runtime.drain(); done() })
  app.addHook('onClose', async () => { await runtime.close() })
  const limits = unreadBodies ?? DEFAULT_UNREAD_BODY_LIMITS
  // The gateway's own routes, each with the service hooks every Portier route has (a Portier app has them already).
  await app.register(async (own) => {
    installServiceHooks(own, { unreadBodies: limits })
    installProblemErrorHandler(own)
    if (options.observabilityRoutes) await own.register(observabilityRoutes, { runtime })
    if (options.metricsRoute) await own.register(metricsRoute, { metrics: runtime.metrics, token: options.metricsToken as string })
    // Documentation needs no credential.
    if (options.documentationRoutes) await own.register(documentationRoutes, { runtime })
  })
  await app.register(trafficContext, { runtime, options, unreadBodies: limits })
}

/**
 * Portier's gateway as a Fastify plugin: register it on any Fastify 5 app, next to
 * routes of the app's own (they take precedence over the gateway's catch-all).
 * Options are validated at registration; a bad one fails `register` naming it.
 */
export const portierGateway = fp(gatewayPlugin, { fastify: '5.x', name: 'portier-gateway' })
export default portierGateway
