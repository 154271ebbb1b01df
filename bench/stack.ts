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
import { seedIdentity, type BenchAccounts } from './seed.js'
import { writeUpstreamsFile } from './upstreams.js'

/**
 * The services run from the build the bench itself was run from: `npm run bench` builds
 * its own (tsconfig.bench.json → dist-bench/), so that it never rewrites dist/ under a
 * server or a test that runs from it; the smoke test runs the bench from dist/, which
 * `npm test` has just built whole.
 */
const BUILD_ROOT = fileURLToPath(new URL('..', import.meta.url))
const built = (entry: string): string => join(BUILD_ROOT, entry)

/** node's arguments for a Node service: its entry, after --cpu-prof when profiling. */
function nodeArgs (entry: string, name: string, profileDir: string | undefined): string[] {
  const profiling = profileDir !== undefined ? ['--cpu-prof', '--cpu-prof-dir', profileDir, '--cpu-prof-name', `${name}.cpuprofile`] : []
  return [...profiling, built(entry)]
}

export interface StackOptions {
  manyKeys: number
  trafficKeys: number
  /** The nginx binary, or null to run without the nginx reference. */
  nginx: string | null
  mockUsers: number
  /** Write a V8 CPU profile of each gateway and of the bare proxy here when they exit (node --cpu-prof). */
  cpuProfileDir?: string
  say: (line: string) => void
}

/** Every process of a bench run, each on its own loopback port. */
export interface Stack {
  mock: Service
  identity: Service
  /** Identity's admin/internal listener (metrics). */
  identityAdminUrl: string
  serviceToken: string
  /** The gateway under test: 10 routes. */
  gateway: Service
  /** Same build and settings, 1 000 routes. */
  gatewayManyRoutes: Service
  bare: Service
  nginx: Service | null
  nginxVersion: string | null
  accounts: BenchAccounts
  /** Settings the services run with (their defaults), which the scenarios' bounds depend on. */
  settings: { argon2: Argon2Params, negativeTtlSeconds: number, l1MaxEntries: number }
  dir: string
  close: () => Promise<void>
}

/**
 * Starts upstream-mock, a private redis-server, identity (on a database seeded first),
 * two gateways (10 and 1 000 routes), the bare proxy and nginx: each its own process,
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
    options.say(`seeding identity: ${options.manyKeys.toLocaleString('en')} keys`)
    const accounts = await seedIdentity(identityEnv, { manyKeys: options.manyKeys, trafficKeys: options.trafficKeys })
    const identity = await startService({
      name: 'identity', command: process.execPath, args: [built('identity/server.js')], env: identityEnv, url: `http://127.0.0.1:${publicPort}`, readyPath: '/healthz'
    })
    stops.push(identity.stop)

    const gatewayEnv = (port: number, upstreamsFile: string, metricsPort = 0): Record<string, string> => ({
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
      LOG_LEVEL: 'info'
    })
    const startGateway = async (name: string, routes: number): Promise<Service> => {
      const [port, metricsPort] = [await freePort(), await freePort()]
      const upstreamsFile = await writeUpstreamsFile(join(dir, `${name}.json`), mock.url, routes)
      const gateway = await startService({
        name,
        command: process.execPath,
        args: nodeArgs('gateway/server.js', name, options.cpuProfileDir),
        env: gatewayEnv(port, upstreamsFile, metricsPort),
        url: `http://127.0.0.1:${port}`,
        readyPath: '/readyz'
      })
      stops.push(gateway.stop)
      return gateway
    }
    const gateway = await startGateway('gateway', 10)
    const gatewayManyRoutes = await startGateway('gateway-1000-routes', 1_000)

    const barePort = await freePort()
    const bare = await startService({
      name: 'bare-proxy',
      command: process.execPath,
      args: nodeArgs('bench/baselines/bare-proxy.js', 'bare-proxy', options.cpuProfileDir),
      env: { BARE_PROXY_PORT: String(barePort), BARE_PROXY_UPSTREAM: mock.url },
      url: `http://127.0.0.1:${barePort}`,
      readyPath: '/healthz'
    })
    stops.push(bare.stop)

    let nginx: Service | null = null
    let version: string | null = null
    if (options.nginx !== null) {
      const nginxPort = await freePort()
      const config = await writeNginxConfig(join(dir, 'nginx'), nginxPort, mockPort)
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
      settings, mock, identity, identityAdminUrl: `http://127.0.0.1:${adminPort}`, serviceToken, gateway, gatewayManyRoutes, bare, nginx, nginxVersion: version, accounts, dir, close
    }
  } catch (err) {
    await close()
    throw err
  }
}
