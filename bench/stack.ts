import { randomBytes } from 'node:crypto'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { loadGatewayConfig } from '../gateway/config.js'
import { loadIdentityCliConfig, type Argon2Params } from '../identity/config.js'
import { freePort } from '../harness/ports.js'
import { startPrivateRedis } from '../harness/redis-server.js'
import { nginxVersion, writeNginxConfig } from './baselines/nginx.js'
import { startService, type Service } from './processes/service.js'
import { BENCH_RATE_POLICY, seedIdentity, type BenchAccounts } from './seed.js'
import { writeUpstreamsFile } from './upstreams.js'
import { startBlackHoleSink, startDiscardingSink } from './trace-sink.js'

/**
 * The services run from the build the bench itself was run from: `npm run bench` builds
 * its own (tsconfig.bench.json → dist-bench/), so that it never rewrites dist/ under a
 * server or a test that runs from it; the smoke test runs the bench from dist/, which
 * `npm test` has just built whole.
 */
const BUILD_ROOT = fileURLToPath(new URL('..', import.meta.url))
const built = (entry: string): string => join(BUILD_ROOT, entry)

/**
 * node's arguments for a Node service: its entry, after --cpu-prof when profiling. A
 * service that may fork workers (node:cluster passes its flags on) gets a folder of
 * its own and node's default names, one profile per process, since a fixed name would
 * have every process write over the others'.
 */
function nodeArgs (entry: string, name: string, profileDir: string | undefined, forks = false): string[] {
  const profiling = profileDir === undefined
    ? []
    : forks
      ? ['--cpu-prof', '--cpu-prof-dir', join(profileDir, name)]
      : ['--cpu-prof', '--cpu-prof-dir', profileDir, '--cpu-prof-name', `${name}.cpuprofile`]
  return [...profiling, built(entry)]
}

export interface StackOptions {
  manyKeys: number
  trafficKeys: number
  /** Keys seeded each with its own per-key rate limit, for the rate-limited many-keys scenario. */
  limitedTrafficKeys: number
  /** The nginx binary, or null to run without the nginx reference. */
  nginx: string | null
  mockUsers: number
  /** Write a V8 CPU profile of each gateway, the bare proxy and the node floor here when they exit (node --cpu-prof). */
  cpuProfileDir?: string
  say: (line: string) => void
}

/** Every process of a bench run, each on its own loopback port. */
export interface Stack {
  /** The throughput scenarios' upstream: precomputed bodies, node:http (bench/static-upstream/). */
  upstream: Service
  /** upstream-mock, the realistic upstream. */
  mock: Service
  identity: Service
  /** Identity's admin/internal listener (metrics). */
  identityAdminUrl: string
  serviceToken: string
  /** The gateway under test: 10 routes. */
  gateway: Service
  /** Same build and settings, 1 000 routes. */
  gatewayManyRoutes: Service
  /** Same as `gateway`, started with GATEWAY_WORKERS=2. */
  gatewayTwoWorkers: Service
  /** Same as `gateway`, without Redis: rate limits counted in process, no L2 key cache, an in-process event bus. */
  gatewayWithoutRedis: Service
  /** Same as `gateway`, tracing on: 10 % and 100 % sampled to a collector that discards, 100 % to one that never answers. */
  gatewayTracing: { tenPercent: Service, everything: Service, blackHoled: Service }
  /** node:http + undici Pool to the static upstream: the Node floor. */
  floor: Service
  /** Fastify + @fastify/http-proxy to the static upstream. */
  bare: Service
  /** The same bare proxy, to upstream-mock. */
  bareToMock: Service
  /** The same bare proxy with its WebSocket support on, to the static upstream. */
  bareWebSocket: Service
  /** nginx proxy_pass to the static upstream. */
  nginx: Service | null
  nginxVersion: string | null
  accounts: BenchAccounts
  /** Settings the services run with (their defaults), which the scenarios' bounds depend on. */
  settings: { argon2: Argon2Params, negativeTtlSeconds: number, l1MaxEntries: number }
  dir: string
  close: () => Promise<void>
}

/**
 * Starts the static upstream, upstream-mock, a private redis-server, identity (on a
 * database seeded first), four gateways (10 routes, 1 000 routes, two workers, and 10
 * routes without Redis), the
 * node floor, two bare proxies (static upstream, mock) and nginx: each its own process,
 * as in production, so that no two share an event loop with each other or with the
 * load generator. Processes log as they would in production (info, one line per
 * request); their output is drained, not kept.
 */
export async function startStack (options: StackOptions): Promise<Stack> {
  const dir = await mkdtemp(join(tmpdir(), 'portier-bench-'))
  const stops: Array<() => Promise<void>> = []
  const close = async (): Promise<void> => {
    for (const stop of stops.reverse()) await stop().catch(() => {})
    await rm(dir, { recursive: true, force: true })
  }
  try {
    const redis = await startPrivateRedis({ teardown: (fn) => { stops.push(async () => { await fn() }) } })
    options.say(`redis-server on ${redis.url}`)

    const upstreamPort = await freePort()
    const upstream = await startService({
      name: 'static-upstream',
      command: process.execPath,
      args: [built('bench/static-upstream/server.js')],
      env: { STATIC_UPSTREAM_PORT: String(upstreamPort) },
      url: `http://127.0.0.1:${upstreamPort}`,
      readyPath: '/healthz'
    })
    stops.push(upstream.stop)

    const mockPort = await freePort()
    const mock = await startService({
      name: 'upstream-mock',
      command: process.execPath,
      args: [built('upstream-mock/server.js')],
      env: { UPSTREAM_MOCK_HOST: '127.0.0.1', UPSTREAM_MOCK_PORT: String(mockPort), UPSTREAM_MOCK_USERS: String(options.mockUsers), LOG_LEVEL: 'warn' },
      url: `http://127.0.0.1:${mockPort}`,
      readyPath: '/healthz'
    })
    stops.push(mock.stop)

    const serviceToken = randomBytes(32).toString('hex')
    const [publicPort, adminPort] = [await freePort(), await freePort()]
    const identityEnv = {
      IDENTITY_HOST: '127.0.0.1',
      IDENTITY_PORT: String(publicPort),
      IDENTITY_ADMIN_HOST: '127.0.0.1',
      IDENTITY_ADMIN_PORT: String(adminPort),
      IDENTITY_DATABASE_PATH: join(dir, 'identity.db'),
      IDENTITY_ADMIN_TOKEN: randomBytes(32).toString('hex'),
      IDENTITY_SERVICE_TOKEN: serviceToken,
      IDENTITY_SIGNING_KEY_ENCRYPTION_KEY: randomBytes(32).toString('hex'),
      REDIS_URL: redis.url,
      LOG_LEVEL: 'info'
    }
    options.say(`seeding identity: ${options.manyKeys.toLocaleString('en')} keys, and ${options.limitedTrafficKeys.toLocaleString('en')} with a per-key rate limit`)
    const accounts = await seedIdentity(identityEnv, { manyKeys: options.manyKeys, trafficKeys: options.trafficKeys, limitedTrafficKeys: options.limitedTrafficKeys })
    const identity = await startService({
      name: 'identity', command: process.execPath, args: [built('identity/server.js')], env: identityEnv, url: `http://127.0.0.1:${publicPort}`, readyPath: '/healthz'
    })
    stops.push(identity.stop)

    const gatewayEnv = (port: number, upstreamsFile: string, metricsPort = 0, extra: Record<string, string> = {}): Record<string, string> => ({
      GATEWAY_HOST: '127.0.0.1',
      GATEWAY_PORT: String(port),
      // Each gateway its own metrics port (scrape it at http://127.0.0.1:<port>/metrics); 0: none.
      GATEWAY_METRICS_PORT: String(metricsPort),
      GATEWAY_UPSTREAMS_FILE: upstreamsFile,
      GATEWAY_WATCH_UPSTREAMS: 'false',
      IDENTITY_PUBLIC_URL: identity.url,
      IDENTITY_INTERNAL_URL: `http://127.0.0.1:${adminPort}`,
      IDENTITY_SERVICE_TOKEN: serviceToken,
      REDIS_URL: redis.url,
      // The default per-IP limit of identity's public routes (600 a minute) would refuse
      // the logins and refreshes, which all come from one address: the same policy, still
      // counted on every such request, far above the load (as the rate-limit scenarios' is).
      GATEWAY_ANONYMOUS_POLICIES: JSON.stringify([{ ...BENCH_RATE_POLICY, name: 'anonymous', partition: 'ip' }]),
      LOG_LEVEL: 'info',
      ...extra
    })
    const targets = { static: upstream.url, mock: mock.url }
    /** `redis: false`: a gateway on its own, which counts, caches and hears events in process. */
    const startGateway = async (name: string, routes: number, extra: Record<string, string> = {}, { redis = true } = {}): Promise<Service> => {
      const [port, metricsPort] = [await freePort(), await freePort()]
      const upstreamsFile = await writeUpstreamsFile(join(dir, `${name}.json`), targets, routes)
      const env = gatewayEnv(port, upstreamsFile, metricsPort, extra)
      if (!redis) {
        delete env.REDIS_URL
        delete env.REDIS_CLUSTER_NODES
      }
      const gateway = await startService({
        name,
        command: process.execPath,
        args: nodeArgs('gateway/server.js', name, options.cpuProfileDir, extra.GATEWAY_WORKERS !== undefined),
        env,
        url: `http://127.0.0.1:${port}`,
        readyPath: '/readyz'
      })
      stops.push(gateway.stop)
      return gateway
    }
    const gateway = await startGateway('gateway', 10)
    const gatewayManyRoutes = await startGateway('gateway-1000-routes', 1_000)
    // A gateway that does not know the setting yet ignores it and runs one process.
    const gatewayTwoWorkers = await startGateway('gateway-2-workers', 10, { GATEWAY_WORKERS: '2' })
    const gatewayWithoutRedis = await startGateway('gateway-no-redis', 10, {}, { redis: false })
    // The collectors run here, in the bench's own process, as a sidecar collector would beside the gateway.
    const [sink, blackHole] = [await startDiscardingSink(), await startBlackHoleSink()]
    stops.push(sink.close, blackHole.close)
    const traced = (endpoint: string, ratio: string): Record<string, string> => ({
      OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: ratio
    })
    const gatewayTracing = {
      tenPercent: await startGateway('gateway-tracing-10', 10, traced(sink.url, '0.1')),
      everything: await startGateway('gateway-tracing-100', 10, traced(sink.url, '1')),
      // Exports end within 2 s, so that the gateway's stop does not wait out the default 10.
      blackHoled: await startGateway('gateway-tracing-black-hole', 10, { ...traced(blackHole.url, '1'), OTEL_EXPORTER_OTLP_TIMEOUT: '2000' })
    }

    const startNodeBaseline = async (name: string, entry: string, env: (port: number) => Record<string, string>): Promise<Service> => {
      const port = await freePort()
      const service = await startService({
        name, command: process.execPath, args: nodeArgs(entry, name, options.cpuProfileDir), env: env(port), url: `http://127.0.0.1:${port}`, readyPath: '/healthz'
      })
      stops.push(service.stop)
      return service
    }
    const floor = await startNodeBaseline('node-floor', 'bench/baselines/node-floor.js', (port) => ({ NODE_FLOOR_PORT: String(port), NODE_FLOOR_UPSTREAM: upstream.url }))
    const bare = await startNodeBaseline('bare-proxy', 'bench/baselines/bare-proxy.js', (port) => ({ BARE_PROXY_PORT: String(port), BARE_PROXY_UPSTREAM: upstream.url }))
    const bareToMock = await startNodeBaseline('bare-proxy-mock', 'bench/baselines/bare-proxy.js', (port) => ({ BARE_PROXY_PORT: String(port), BARE_PROXY_UPSTREAM: mock.url }))
    const bareWebSocket = await startNodeBaseline('bare-proxy-websocket', 'bench/baselines/bare-proxy.js', (port) => ({ BARE_PROXY_PORT: String(port), BARE_PROXY_UPSTREAM: upstream.url, BARE_PROXY_WEBSOCKET: '1' }))

    let nginx: Service | null = null
    let version: string | null = null
    if (options.nginx !== null) {
      const nginxPort = await freePort()
      const config = await writeNginxConfig(join(dir, 'nginx'), nginxPort, upstreamPort)
      version = await nginxVersion(options.nginx)
      nginx = await startService({
        name: 'nginx', command: options.nginx, args: ['-p', join(dir, 'nginx'), '-c', config, '-g', 'daemon off;'], env: {}, url: `http://127.0.0.1:${nginxPort}`, readyPath: '/healthz'
      })
      stops.push(nginx.stop)
    }
    const keyCache = loadGatewayConfig(gatewayEnv(0, 'unused.json')).plugin.keyCache
    const settings = {
      argon2: loadIdentityCliConfig(identityEnv).argon2,
      negativeTtlSeconds: keyCache?.negativeTtlSeconds ?? NaN,
      l1MaxEntries: keyCache?.l1MaxEntries ?? NaN
    }
    return {
      settings,
      upstream,
      mock,
      identity,
      identityAdminUrl: `http://127.0.0.1:${adminPort}`,
      serviceToken,
      gateway,
      gatewayManyRoutes,
      gatewayTwoWorkers,
      gatewayWithoutRedis,
      gatewayTracing,
      floor,
      bare,
      bareToMock,
      bareWebSocket,
      nginx,
      nginxVersion: version,
      accounts,
      dir,
      close
    }
  } catch (err) {
    await close()
    throw err
  }
}
