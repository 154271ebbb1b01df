import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import type { Test } from 'tap'
import { adminClient, http, type HttpAnswer, type HttpRequest } from './http.js'
import { assertStatus } from './assert.js'
import { tempDir } from './temp.js'
import { writeMockUpstreamsFile } from './upstreams-file.js'
import type { LeakWatch } from './leak-watch.js'
import { builtEntry, REPO_ROOT } from './process.js'
import { freePort, startRedis, type TestRedis } from './redis.js'
import { ADA, sidOf, type SessionTokens } from './tokens.js'
import { nodeCommand } from './node-command.js'
import { TEST_SIGNING_KEY_ENCRYPTION_KEY, WITH_SIGNING_KEY_ENCRYPTION } from './signing-key-encryption.js'

/**
 * The system as production runs it, for the fault suites: upstream-mock, identity and
 * gateways each in its own process (built entries under dist/), on loopback ports
 * chosen up front so that a killed process restarts on the same address. Every
 * process's output is kept, across restarts, for the leak check.
 */

export interface ServerProcess {
  name: string
  url: string
  /** Everything it wrote (stdout and stderr), across restarts. */
  output: () => string
  /** The running child, replaced by each restart. */
  child: () => ChildProcess
  /** Sends a signal and waits for the exit; resolves with the exit code (null when killed by the signal). */
  kill: (signal: NodeJS.Signals) => Promise<number | null>
  /** Starts it again with the same environment (after kill), and waits until it answers. */
  restart: () => Promise<void>
  /** SIGTERM (SIGKILL after 10 s); a no-op when it is not running. */
  stop: () => Promise<void>
  running: () => boolean
}

const READY_TIMEOUT_MS = 30_000

async function answers (url: string): Promise<boolean> {
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(1_000) })
    await response.arrayBuffer()
    return response.status >= 200 && response.status < 300
  } catch {
    return false
  }
}

/** Runs a built entry with exactly `env` (plus PATH) and waits until `readyPath` answers 2xx. */
export async function startServerProcess (t: Test, spec: { name: string, entry: string, env: Record<string, string>, url: string, readyPath: string, leaks?: LeakWatch }): Promise<ServerProcess> {
  let output = ''
  let child: ChildProcess
  const spawnIt = (): void => {
    child = spawn(...nodeCommand([builtEntry(spec.entry)]), { cwd: REPO_ROOT, env: { PATH: process.env.PATH ?? '', ...spec.env }, stdio: ['ignore', 'pipe', 'pipe'] })
    child.stdout?.on('data', (chunk: Buffer) => { output += chunk.toString() })
    child.stderr?.on('data', (chunk: Buffer) => { output += chunk.toString() })
  }
  const running = (): boolean => child.exitCode === null && child.signalCode === null
  const waitReady = async (): Promise<void> => {
    const deadline = Date.now() + READY_TIMEOUT_MS
    while (!await answers(spec.url + spec.readyPath)) {
      if (!running()) throw new Error(`${spec.name} exited before it was ready:\n${output.slice(-4_000)}`)
      if (Date.now() > deadline) throw new Error(`${spec.name} was not ready within ${READY_TIMEOUT_MS} ms:\n${output.slice(-4_000)}`)
      await sleep(50)
    }
  }
  const kill = async (signal: NodeJS.Signals): Promise<number | null> => {
    if (!running()) return child.exitCode
    const exited = once(child, 'exit')
    child.kill(signal)
    const [code] = await exited as [number | null]
    return code
  }
  const stop = async (): Promise<void> => {
    if (!running()) return
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000)
    await kill('SIGTERM')
    clearTimeout(timer)
  }
  spawnIt()
  t.teardown(async () => { if (running()) child.kill('SIGKILL') })
  await waitReady()
  const server: ServerProcess = {
    name: spec.name,
    url: spec.url,
    output: () => output,
    child: () => child,
    kill,
    restart: async () => { spawnIt(); await waitReady() },
    stop,
    running
  }
  spec.leaks?.source({ name: spec.name, text: server.output, stop })
  return server
}

export interface IdentityProcess extends ServerProcess {
  publicUrl: string
  adminUrl: string
  adminToken: string
  serviceToken: string
  databasePath: string
  eventsChannel: string
  admin: ReturnType<typeof adminClient>
}

export interface GatewayProcess extends ServerProcess {
  /** Its private metrics listener (GET /metrics), on a port of its own. */
  metricsUrl: string
}

export interface ProcessStack {
  redis: TestRedis
  mock: ServerProcess
  identity: IdentityProcess
  gateways: GatewayProcess[]
  /** The first gateway. */
  gateway: GatewayProcess
  /** Another gateway process on the same Redis and identity; `env` overrides its defaults. */
  addGateway: (env?: Record<string, string>) => Promise<GatewayProcess>
  /** A request to a gateway (the first unless told). */
  call: <T = any>(path: string, request?: HttpRequest, gateway?: ServerProcess) => Promise<HttpAnswer<T>>
  user: { email: string, password: string }
  userId: string
  /** Logs the user in through the gateway (asserts 201); the tokens are registered as secrets. */
  login: () => Promise<SessionTokens>
  /** Creates an API key through the admin API (asserts 201); the key is registered as a secret. */
  createKey: (permissions: string[], extra?: Record<string, unknown>) => Promise<{ id: string, key: string }>
  /** Identity's and the gateways' shared environment. */
  env: { identity: Record<string, string>, gateway: Record<string, string> }
}

export interface ProcessStackOptions {
  leaks: LeakWatch
  /** Identity's environment on top of the defaults. */
  identityEnv?: Record<string, string>
  /** upstream-mock's environment on top of the defaults. */
  mockEnv?: Record<string, string>
  /** Every gateway's environment on top of the defaults. */
  gatewayEnv?: Record<string, string>
  /** A Redis to use instead of a private redis-server (e.g. startRedisCluster's: its `env` then replaces REDIS_URL). */
  redis?: TestRedis
  gateways?: number
}

let keyCounter = 0

/**
 * Redis (private unless given), upstream-mock, identity with a role `reader`
 * (users:list) and the user ADA, and `gateways` gateway processes (1 by default)
 * on the shipped upstreams pointed at the mock.
 */
export async function startProcessStack (t: Test, options: ProcessStackOptions): Promise<ProcessStack> {
  const { leaks } = options
  const dir = tempDir(t, 'portier-processes-')
  const redis = options.redis ?? await startRedis(t)
  const redisEnv = redis.env ?? { REDIS_URL: redis.url }

  const mockPort = await freePort()
  const mock = await startServerProcess(t, {
    name: 'upstream-mock',
    entry: 'dist/upstream-mock/server.js',
    env: { UPSTREAM_MOCK_HOST: '127.0.0.1', UPSTREAM_MOCK_PORT: String(mockPort), UPSTREAM_MOCK_USERS: '120', LOG_LEVEL: 'info', ...options.mockEnv },
    url: `http://127.0.0.1:${mockPort}`,
    readyPath: '/healthz',
    leaks
  })

  const [publicPort, adminPort] = [await freePort(), await freePort()]
  const adminToken = randomBytes(24).toString('hex')
  const serviceToken = randomBytes(24).toString('hex')
  const eventsChannel = `portier:test:${randomBytes(6).toString('hex')}`
  const databasePath = join(dir, 'identity.db')
  leaks.secret(adminToken, serviceToken, ADA.password, TEST_SIGNING_KEY_ENCRYPTION_KEY)
  const identityEnv = {
    IDENTITY_HOST: '127.0.0.1',
    IDENTITY_PORT: String(publicPort),
    IDENTITY_ADMIN_HOST: '127.0.0.1',
    IDENTITY_ADMIN_PORT: String(adminPort),
    IDENTITY_DATABASE_PATH: databasePath,
    IDENTITY_ADMIN_TOKEN: adminToken,
    IDENTITY_SERVICE_TOKEN: serviceToken,
    IDENTITY_EVENTS_CHANNEL: eventsChannel,
    IDENTITY_ARGON2_MEMORY_KIB: '7168',
    IDENTITY_ARGON2_TIME_COST: '5',
    ...WITH_SIGNING_KEY_ENCRYPTION,
    ...redisEnv,
    LOG_LEVEL: 'info',
    ...options.identityEnv
  }
  const identityServer = await startServerProcess(t, {
    name: 'identity', entry: 'dist/identity/server.js', env: identityEnv, url: `http://127.0.0.1:${publicPort}`, readyPath: '/healthz', leaks
  })
  const adminUrl = `http://127.0.0.1:${adminPort}`
  const admin = adminClient(adminUrl, adminToken)
  const identity: IdentityProcess = {
    ...identityServer, publicUrl: identityServer.url, adminUrl, adminToken, serviceToken, databasePath, eventsChannel, admin
  }

  assertStatus(t, await admin('PUT', '/admin/roles/reader', { permissions: ['users:list'] }), 200, 'role reader created')
  const created = await admin('POST', '/admin/users', { ...ADA, roles: ['reader'] })
  assertStatus(t, created, 201, 'user created')

  const upstreamsFile = writeMockUpstreamsFile(dir, mock.url)
  const gatewayEnv = {
    GATEWAY_HOST: '127.0.0.1',
    GATEWAY_UPSTREAMS_FILE: upstreamsFile,
    GATEWAY_WATCH_UPSTREAMS: 'false',
    IDENTITY_PUBLIC_URL: identity.publicUrl,
    IDENTITY_INTERNAL_URL: adminUrl,
    IDENTITY_SERVICE_TOKEN: serviceToken,
    IDENTITY_EVENTS_CHANNEL: eventsChannel,
    ...redisEnv,
    LOG_LEVEL: 'info',
    ...options.gatewayEnv
  }
  const gateways: GatewayProcess[] = []
  const addGateway = async (env: Record<string, string> = {}): Promise<GatewayProcess> => {
    const [port, metricsPort] = [await freePort(), await freePort()]
    // Each its own metrics port: every gateway would take the default one otherwise.
    const withPorts = { ...gatewayEnv, GATEWAY_PORT: String(port), GATEWAY_METRICS_PORT: String(metricsPort), ...env }
    const gateway = await startServerProcess(t, {
      name: `gateway-${gateways.length + 1}`,
      entry: 'dist/gateway/server.js',
      env: withPorts,
      url: `http://127.0.0.1:${port}`,
      readyPath: '/readyz',
      leaks
    })
    const withMetrics = { ...gateway, metricsUrl: `http://127.0.0.1:${withPorts.GATEWAY_METRICS_PORT}` }
    gateways.push(withMetrics)
    return withMetrics
  }
  for (let i = 0; i < (options.gateways ?? 1); i++) await addGateway()
  const first = gateways[0] as GatewayProcess
  const call = async <T = any>(path: string, request?: HttpRequest, gateway: ServerProcess = first): Promise<HttpAnswer<T>> =>
    await http<T>(`${gateway.url}${path}`, request)

  return {
    redis,
    mock,
    identity,
    gateways,
    gateway: first,
    addGateway,
    call,
    user: ADA,
    userId: created.body.user.id as string,
    env: { identity: identityEnv, gateway: gatewayEnv },
    async login () {
      const answer = await call('/sessions', { body: { session: ADA } })
      assertStatus(t, answer, 201, 'login through the gateway')
      leaks.secret(answer.body.access_token, answer.body.refresh_token)
      return { ...answer.body, sid: sidOf(answer.body.access_token) }
    },
    async createKey (permissions, extra = {}) {
      const answer = await admin('POST', '/admin/keys', {
        name: `process-key-${++keyCounter}`, permissions, expires_at: new Date(Date.now() + 86_400_000).toISOString(), ...extra
      })
      assertStatus(t, answer, 201, 'API key created')
      leaks.secret(answer.body.key)
      return { id: answer.body.api_key.id as string, key: answer.body.key as string }
    }
  }
}
