import { isUtf8 } from 'node:buffer'
import type { IncomingMessage } from 'node:http'
import fp from 'fastify-plugin'
import type { FastifyInstance, FastifyPluginAsync, FastifyRequest } from 'fastify'
import { createBodyBudget, type BodyBudget } from '../common/body-budget.js'
import { ConfigError, validateConfig } from '../common/config.js'
import { installAcceptCheck } from '../common/accept.js'
import { CommonProblems, installProblemErrorHandler } from '../common/problem.js'
import { bufferedBodyReader } from '../common/request-body.js'
import { installRequestEcho } from '../common/request-echo.js'
import { documentationRoutes } from './docs/routes.js'
import { observabilityRoutes } from './observability/routes.js'
import { metricsRoute } from './observability/metrics-route.js'
import type { GatewayMetrics } from './observability/metrics.js'
import { GatewayOptionsSchema, metricsOptionProblems, redisTargetOf, type GatewayOptionsInput, type ResolvedGatewayOptions } from './options.js'
import { addVary, registerProxy } from './proxy/index.js'
import type { GateDecision } from './request-gate.js'
import { createGatewayRuntime, type GatewayRuntime, type RuntimeDependencies } from './runtime.js'
import { isJsonContentType, rewriteGatewayBody } from './proxy/json-bodies.js'
import { parseInflectionHeader, SpellingBook, type KeyCase } from './inflection/index.js'
import type { ResolvedRoute, RouteTable } from './routing/index.js'

export type GatewayPluginOptions = GatewayOptionsInput & RuntimeDependencies

/** What a host app reaches of the gateway registered on it (`app.portierGateway`). */
export interface PortierGateway {
  /** Reads the upstreams again (on the host's own signal): false when the new config is refused and the previous one stays. */
  reload: () => boolean
  /** The route table in force, and whether /metrics is served on the app: what `gatewayOpenApiDocument` documents. */
  readonly table: RouteTable
  readonly metricsRoute: boolean
  /** For a host that serves the metrics itself, where only its monitoring reaches them. */
  readonly metrics: Pick<GatewayMetrics, 'registry'>
}

declare module 'fastify' {
  interface FastifyInstance {
    /** The gateway registered on this app: reload its upstreams, document its routes, read its metrics. */
    portierGateway: PortierGateway
  }
  interface FastifyRequest {
    portierGate: GateDecision | null
    /** The route the request matched, set by the gate before it authenticates: what a refusal is counted under. */
    portierRoute: ResolvedRoute | null
  }
}

/** Identity's routes get this fraction (1/n) of the body budget. */
const ANONYMOUS_BUDGET_SHARE = 8

/** Standard RFC 9457 members keep their names whatever the inflection; extension members follow it. */
const PROBLEM_MEMBERS = new Set(['type', 'title', 'status', 'detail', 'code'])

/**
 * The style a body should be inflected to: the gate's reading, or for a request the gate
 * refused (401, 403, 404), the header's own when it is valid: a refusal's extension
 * members follow it too.
 */
function inflectionOf (request: FastifyRequest): KeyCase | null {
  if (request.portierGate !== null) return request.portierGate.inflection
  const asked = parseInflectionHeader(request.headers['x-api-inflection'])
  return asked.kind === 'style' ? asked.style : null
}

function decisionOf (request: FastifyRequest): GateDecision {
  // The gate runs in onRequest for every route of the proxy context, so this is set by the time a handler runs.
  return request.portierGate as GateDecision
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
  const problems = [...redisTargetOf(resolved).problems, ...metricsOptionProblems(resolved)]
  if (problems.length > 0) throw new ConfigError(OPTIONS_SOURCE, problems)
  return resolved
}

/**
 * Why a JSON body is refused before it is read: the gateway does not decode content
 * codings, so a compressed body (or one that only claims to be) would be forwarded
 * unread and decoded by the upstream alone.
 */
function refusedEncoding (contentEncoding: string | undefined): Error | null {
  return contentEncoding !== undefined && contentEncoding.trim().toLowerCase() !== 'identity' ? CommonProblems.unsupportedMediaType() : null
}

/**
 * The gateway's body budget, split: an eighth for identity's routes, which take no
 * credential, the rest for upstream routes. So clients with credentials sending large
 * bodies cannot crowd out logins, and anonymous clients cannot crowd out the upstreams.
 */
function createBodyBudgets (totalBytes: number): { anonymous: BodyBudget, authenticated: BodyBudget } {
  const anonymousBytes = Math.floor(totalBytes / ANONYMOUS_BUDGET_SHARE)
  return { anonymous: createBodyBudget(anonymousBytes), authenticated: createBodyBudget(totalBytes - anonymousBytes) }
}

/**
 * The largest body a route takes: identity's routes take no credential here, so an
 * anonymous client gets the few KiB login, refresh and logout need; upstream routes
 * take their upstream's limit, or the gateway's.
 */
function bodyLimitOf (decision: GateDecision, options: ResolvedGatewayOptions): number {
  if (decision.route.auth === 'none') return options.identityBodyLimitBytes
  return decision.route.upstream.bodyLimitBytes ?? options.bodyLimitBytes
}

/**
 * The routes and hooks that carry traffic, in their own encapsulated context so that
 * none of it touches the host app's routes: only JSON bodies are parsed (anything else
 * is a 415), every request passes the gate before its body is read, errors are
 * problem+json, and problem extension members follow the requested inflection.
 */
async function trafficContext (app: FastifyInstance, { runtime, options }: { runtime: GatewayRuntime, options: ResolvedGatewayOptions }): Promise<void> {
  app.removeAllContentTypeParsers()
  // Every body the gateway holds while it forwards it counts against a budget: many slow or stalled bodies cannot add up.
  const readBody = bufferedBodyReader(app)
  const budgets = createBodyBudgets(options.bufferedBodiesMaxBytes)
  for (const type of ['application/json', /^application\/[\w.+-]+\+json$/]) {
    app.addContentTypeParser(type, async (request: FastifyRequest, payload: IncomingMessage) => {
      const refused = refusedEncoding(request.headers['content-encoding'])
      if (refused !== null) throw refused
      const decision = decisionOf(request)
      const anonymous = decision.route.auth === 'none'
      const body = await readBody(request, payload, bodyLimitOf(decision, options), anonymous ? budgets.anonymous : budgets.authenticated)
      // JSON is UTF-8 (RFC 8259 §8.1): other bytes would reach the upstream as U+FFFD.
      if (!isUtf8(body)) throw CommonProblems.malformedJson()
      return body
    })
  }

  installProblemErrorHandler(app)

  // A host app that is not a Portier app gets these here; the standalone server has them already.
  installRequestEcho(app)
  installAcceptCheck(app)
  // Hooks on the path of every request take a callback: an async hook costs a promise
  // and a turn of the microtask queue per request, even when it has nothing to wait for.
  app.addHook('onRequest', (request, reply, done) => {
    let decision
    try {
      decision = runtime.gate(request, reply)
    } catch (err) {
      done(err as Error)
      return
    }
    if (decision instanceof Promise) {
      decision.then((decided) => { request.portierGate = decided; done() }, done)
      return
    }
    request.portierGate = decision
    done()
  })

  const spellings = new SpellingBook()
  app.addHook('onSend', (request, reply, payload, done) => {
    if (!isJsonContentType(reply.getHeader('content-type'))) {
      done(null, payload)
      return
    }
    const style = inflectionOf(request)
    // Every JSON answer past the gate, proxied or gateway-made, can be inflected: say so to caches.
    if (request.portierGate !== null || style !== null) addVary(reply, 'x-api-inflection')
    // A string is a body the gateway serialised itself (a problem); proxied bodies are
    // streams or buffers, renamed already on their way through.
    if (style === null || typeof payload !== 'string') {
      done(null, payload)
      return
    }
    const isProblem = String(reply.getHeader('content-type')).toLowerCase().startsWith('application/problem+json')
    done(null, rewriteGatewayBody(payload, spellings.gatewayTable(style), isProblem ? PROBLEM_MEMBERS : undefined))
  })

  const requests = runtime.metrics.requests
  app.addHook('onResponse', (request, reply, done) => {
    const route = request.portierRoute?.pattern ?? 'unmatched'
    const { method } = request
    const status = reply.statusCode
    requests.at(`${route}\u0000${method}\u0000${status}`, () => ({ route, method, status: String(status) })).inc()
    done()
  })

  await registerProxy(app, {
    decisionOf,
    metrics: runtime.metrics,
    spellings,
    maxInflectionDepth: options.maxInflectionDepth,
    maxInflectedResponseBytes: options.maxInflectedResponseBytes,
    inflectedResponseHoldBytes: options.inflectedResponseHoldBytes,
    maxInflectedRequestMembers: options.maxInflectedRequestMembers,
    maxInflectedResponseMembers: options.maxInflectedResponseMembers,
    connectTimeoutMs: runtime.connectTimeoutMs,
    allowedUnusualHeaders: options.allowedUnusualHeaders
  })
}

const gatewayPlugin: FastifyPluginAsync<GatewayPluginOptions> = async (app, pluginOptions) => {
  const { events, redis, now, ...input } = pluginOptions
  const options = resolveOptions(input)
  const runtime = createGatewayRuntime(options, {
    ...(events !== undefined ? { events } : {}),
    ...(redis !== undefined ? { redis } : {}),
    ...(now !== undefined ? { now } : {})
  }, app.log)
  const gateway: PortierGateway = {
    reload: runtime.reload,
    get table (): RouteTable { return runtime.table },
    metricsRoute: runtime.metricsRoute,
    metrics: { registry: runtime.metrics.registry }
  }
  app.decorate('portierGateway', gateway)
  app.decorateRequest('portierGate', null)
  app.decorateRequest('portierRoute', null)
  app.addHook('onReady', async () => { await runtime.start() })
  app.addHook('onClose', async () => { await runtime.close() })
  if (options.observabilityRoutes) await app.register(observabilityRoutes, { runtime })
  if (options.metricsRoute) await app.register(metricsRoute, { metrics: runtime.metrics, token: options.metricsToken as string })
  // Outside the traffic context too: documentation needs no credential.
  if (options.documentationRoutes) await app.register(documentationRoutes, { runtime })
  await app.register(trafficContext, { runtime, options })
}

/**
 * Portier's gateway as a Fastify plugin: register it on any Fastify 5 app, next to
 * routes of the app's own (they take precedence over the gateway's catch-all).
 * Options are validated at registration; a bad one fails `register` naming it.
 */
export const portierGateway = fp(gatewayPlugin, { fastify: '5.x', name: 'portier-gateway' })
export default portierGateway
