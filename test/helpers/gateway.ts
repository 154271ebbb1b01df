import type { Test } from 'tap'
import { buildGatewayServer, buildMetricsServer } from '../../gateway/app.js'
import type { GatewayOptionsInput } from '../../gateway/options.js'
import { loadUpstreamsFile, type UpstreamsConfig } from '../../gateway/routing/index.js'
import type { EventBus } from '../../common/event-bus.js'
import type { UnreadBodyLimits } from '../../common/unread-body.js'
import type { TracingConfig } from '../../common/tracing/config.js'
import { captureLogs } from './logs.js'
import { DEFAULT_UPSTREAMS_FILE } from './upstreams-file.js'
import { http, type HttpAnswer, type HttpRequest } from './http.js'
import { assertStatus } from './assert.js'
import type { TestIdentity } from './identity.js'
import type { FakeClock } from './identity.js'
import { startUpstreamMock } from './upstream-mock.js'
import { startRedis, type TestRedis } from './redis.js'
import { startWithUser, type UserSetup, type UserSetupOptions } from './session-setup.js'

export { DEFAULT_UPSTREAMS_FILE } from './upstreams-file.js'

/** The shipped default upstreams, pointed at a test's upstream-mock. */
export function mockUpstreams (mockUrl: string): UpstreamsConfig {
  const { config } = loadUpstreamsFile(DEFAULT_UPSTREAMS_FILE)
  return { upstreams: config.upstreams.map((u) => ({ ...u, target: mockUrl })) }
}

export interface TestGateway {
  url: string
  /** The gateway's private metrics listener (GET /metrics), as the standalone server runs it. */
  metricsUrl: string
  app: Awaited<ReturnType<typeof buildGatewayServer>>
  logs: Array<Record<string, unknown>>
  logText: () => string
  /** A request to the gateway (path relative to its base URL). */
  call: <T = any>(path: string, request?: HttpRequest) => Promise<HttpAnswer<T>>
}

export interface GatewaySetup {
  identity: Pick<TestIdentity, 'publicUrl' | 'adminUrl' | 'serviceToken' | 'config'>
  upstreams: NonNullable<GatewayOptionsInput['upstreams']> | string
  redisUrl?: string | undefined
  clock?: FakeClock | undefined
  events?: EventBus | undefined
  options?: Partial<GatewayOptionsInput> | undefined
  /** The server's GATEWAY_TRUST_PROXY (false unless given). */
  trustProxy?: boolean | string | undefined
  /** The listener's treatment of bodies it answers unread (the defaults unless given). */
  unreadBodies?: UnreadBodyLimits | undefined
  /** OpenTelemetry tracing, as the server reads it from OTEL_* (off unless given). */
  tracing?: TracingConfig | undefined
}

/** A gateway on loopback port 0 in front of a test identity, closed at the end of the test. */
export async function startGateway (t: Test, setup: GatewaySetup): Promise<TestGateway> {
  const logs = captureLogs()
  const { identity } = setup
  const app = await buildGatewayServer({
    host: '127.0.0.1',
    port: 0,
    metrics: null,
    trustProxy: setup.trustProxy ?? false,
    shutdownGraceMs: 1_000,
    logLevel: 'info',
    ...(setup.unreadBodies !== undefined ? { unreadBodies: setup.unreadBodies } : {}),
    ...(setup.tracing !== undefined ? { tracing: setup.tracing } : {}),
    plugin: {
      ...(typeof setup.upstreams === 'string' ? { upstreamsFile: setup.upstreams } : { upstreams: setup.upstreams }),
      identity: {
        publicUrl: identity.publicUrl,
        internalUrl: identity.adminUrl,
        serviceToken: identity.serviceToken,
        issuer: identity.config.issuer,
        audience: identity.config.audience
      },
      eventsChannel: identity.config.eventsChannel,
      ...(setup.redisUrl !== undefined ? { redisUrl: setup.redisUrl } : {}),
      ...setup.options
    }
  }, {
    logStream: logs.stream,
    ...(setup.clock !== undefined ? { now: setup.clock.now } : {}),
    ...(setup.events !== undefined ? { events: setup.events } : {})
  })
  t.teardown(() => app.close())
  const metrics = await buildMetricsServer({ logLevel: 'info' }, app.portierGateway, { logStream: logs.stream })
  t.teardown(() => metrics.close())
  const url = await app.listen({ host: '127.0.0.1', port: 0 })
  const metricsUrl = await metrics.listen({ host: '127.0.0.1', port: 0 })
  return {
    url,
    metricsUrl,
    app,
    logs: logs.lines,
    logText: logs.text,
    call: async (path, request) => await http(`${url}${path}`, request)
  }
}

export interface Stack extends UserSetup {
  redis: TestRedis
  upstreamUrl: string
  gateway: TestGateway
  /** Another gateway replica on the same Redis and identity. */
  addGateway: (options?: Partial<GatewayOptionsInput>) => Promise<TestGateway>
  /** What startGateway needs to join this stack; add `upstreams` (and options) of your own. */
  gatewaySetup: Omit<GatewaySetup, 'upstreams'>
  /** Creates an API key through the admin API (asserts 201) and returns its id and full value. */
  createKey: (permissions: string[], extra?: Record<string, unknown>) => Promise<{ id: string, key: string }>
}

let keyCounter = 0

/**
 * The whole system for one test: a private redis-server, identity (fake clock shared
 * with the gateway, so token times agree) with a role `reader` (users:list) and the
 * user ADA, upstream-mock, and a gateway on the shipped upstreams config.
 */
export async function startStack (t: Test, options: UserSetupOptions & { gateway?: Partial<GatewayOptionsInput>, redis?: TestRedis } = {}): Promise<Stack> {
  const redis = options.redis ?? await startRedis(t)
  const s = await startWithUser(t, { ...options, env: { REDIS_URL: redis.url, ...options.env } })
  // Tokens are checked against the wall clock by jose's defaults elsewhere; here the stack shares identity's fake clock.
  s.clock.advance(Date.now() - s.clock.now())
  const upstream = await startUpstreamMock(t, { users: 120 })
  const gatewaySetup = { identity: s, redisUrl: redis.url, clock: s.clock }
  const addGateway = async (gatewayOptions: Partial<GatewayOptionsInput> = {}): Promise<TestGateway> =>
    await startGateway(t, { ...gatewaySetup, upstreams: mockUpstreams(upstream.url), options: { ...options.gateway, ...gatewayOptions } })
  const gateway = await addGateway()
  return {
    ...s,
    redis,
    upstreamUrl: upstream.url,
    gateway,
    addGateway,
    gatewaySetup,
    createKey: async (permissions, extra = {}) => {
      const answer = await s.admin('POST', '/admin/keys', {
        name: `key-${++keyCounter}`, permissions, expires_at: new Date(s.clock.now() + 86_400_000).toISOString(), ...extra
      })
      assertStatus(t, answer, 201, 'API key created')
      return { id: answer.body.api_key.id as string, key: answer.body.key as string }
    }
  }
}
