import t from 'tap'
import { spawn, spawnSync } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { availableParallelism } from 'node:os'
import { stringify } from 'yaml'
import { connect } from 'node:net'
import { Writable } from 'node:stream'
import { buildGatewayServer, buildMetricsServer } from '../../gateway/app.js'
import { loadGatewayConfig } from '../../gateway/config.js'
import { ConfigError } from '../../common/config.js'
import { assertJson, assertProblem } from '../helpers/assert.js'
import { mockUpstreams, startStack } from '../helpers/gateway.js'
import { http } from '../helpers/http.js'
import { freePort } from '../helpers/redis.js'
import { tempDir } from '../helpers/temp.js'
import { repoPath } from '../helpers/repo-root.js'
import { nodeCommand } from '../helpers/node-command.js'

async function accepts (port: number): Promise<boolean> {
  return await new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port })
    socket.once('connect', () => { socket.destroy(); resolve(true) })
    socket.once('error', () => { resolve(false) })
  })
}

const SERVER = repoPath('dist/gateway/server.js')
const TOKEN = 's'.repeat(40)

t.test('the environment is validated, naming every bad variable', async (t) => {
  const error = (() => {
    try {
      loadGatewayConfig({ GATEWAY_PORT: 'eighty', GATEWAY_KEY_CACHE_L1_TTL_SECONDS: '0', IDENTITY_PUBLIC_URL: 'identity' })
    } catch (err) { return err }
    return null
  })()
  t.ok(error instanceof ConfigError, 'a ConfigError')
  const message = (error as Error).message
  for (const name of ['GATEWAY_PORT', 'GATEWAY_KEY_CACHE_L1_TTL_SECONDS', 'IDENTITY_PUBLIC_URL', 'IDENTITY_SERVICE_TOKEN']) {
    t.match(message, name, `names ${name}`)
  }
  const config = loadGatewayConfig({ IDENTITY_SERVICE_TOKEN: TOKEN })
  t.equal(config.port, 3000, 'defaults apply')
  t.equal(config.plugin.upstreamsFile, 'gateway/upstreams.default.yaml', 'the shipped upstreams by default')
  t.notOk('redisUrl' in config.plugin, 'no Redis unless REDIS_URL is set')
  t.notOk('allowedUnusualHeaders' in config.plugin, 'no unusual header name is allowed unless GATEWAY_ALLOWED_UNUSUAL_HEADERS is set')
  t.same(loadGatewayConfig({ IDENTITY_SERVICE_TOKEN: TOKEN, GATEWAY_ALLOWED_UNUSUAL_HEADERS: ' x_legacy_id, X.Trace ,' }).plugin.allowedUnusualHeaders,
    ['x_legacy_id', 'X.Trace'], 'GATEWAY_ALLOWED_UNUSUAL_HEADERS: a comma list, trimmed')
})

t.test('GATEWAY_PUBLIC_HOSTS: a comma list of host[:port], each checked at start and named when bad', async (t) => {
  const hosts = (value: string): unknown => loadGatewayConfig({ IDENTITY_SERVICE_TOKEN: TOKEN, GATEWAY_PUBLIC_HOSTS: value }).plugin.publicHosts
  t.notOk('publicHosts' in loadGatewayConfig({ IDENTITY_SERVICE_TOKEN: TOKEN }).plugin, 'unset: any well-formed Host is served')
  t.same(hosts(' api.example.com, api.example.com:8443 ,[::1]:3000'), ['api.example.com', 'api.example.com:8443', '[::1]:3000'], 'trimmed, ports and IPv6 literals kept')
  const problems = (value: string): string[] => { try { hosts(value) } catch (err) { return (err as ConfigError).problems } return [] }
  t.same(problems(' , '), ['GATEWAY_PUBLIC_HOSTS: must name at least one host[:port] (unset it to serve any Host)'], 'an empty list is not "serve nothing" by accident')
  for (const [bad, index] of [['api.example.com:99999', 0], ['good.example, bad_host!', 1], ['api.example.com/path', 0], ['user@api.example.com', 0]] as const) {
    const found = problems(bad)
    t.equal(found.length, 1, `${JSON.stringify(bad)} is refused`)
    t.match(found[0], new RegExp(`^GATEWAY_PUBLIC_HOSTS\\[${index}\\]: .* is not a host\\[:port\\]`), 'naming the variable and the item')
  }
})

t.test('GATEWAY_WORKERS: 1 by default, a positive count, or auto for one per core; anything else is refused naming the value', async (t) => {
  const workers = (value?: string): number => loadGatewayConfig({ IDENTITY_SERVICE_TOKEN: TOKEN, ...(value !== undefined ? { GATEWAY_WORKERS: value } : {}) }).workers
  t.equal(workers(), 1, 'unset: one process')
  t.equal(workers(''), 1, 'empty: unset')
  t.equal(workers('3'), 3, 'a count')
  t.equal(workers('auto'), availableParallelism(), 'auto: os.availableParallelism()')
  for (const bad of ['0', '-1', 'two', '1.5', ' 2', 'AUTO', '1e3']) {
    const problems = (() => { try { workers(bad) } catch (err) { return (err as ConfigError).problems } return [] })()
    t.same(problems, [`GATEWAY_WORKERS: must be a positive integer or auto, not ${JSON.stringify(bad)}`], `${JSON.stringify(bad)} is refused, naming it`)
  }
  const metricsOnMain = { IDENTITY_SERVICE_TOKEN: TOKEN, GATEWAY_METRICS_ON_MAIN_LISTENER: 'true', GATEWAY_METRICS_TOKEN: 'm'.repeat(32) }
  t.equal(loadGatewayConfig({ ...metricsOnMain, GATEWAY_WORKERS: '1' }).plugin.metricsRoute, true, 'metrics on the main listener with one process')
  t.throws(() => loadGatewayConfig({ ...metricsOnMain, GATEWAY_WORKERS: '2' }), { message: /GATEWAY_METRICS_ON_MAIN_LISTENER: must be false with more than one worker/ },
    'refused with workers: whichever worker took the scrape would answer with its own counts only')
})

t.test('the metrics listener: on by default on 127.0.0.1:9464, off with port 0', async (t) => {
  const config = loadGatewayConfig({ IDENTITY_SERVICE_TOKEN: TOKEN })
  t.same(config.metrics, { host: '127.0.0.1', port: 9464 }, 'loopback, 9464')
  t.equal(config.plugin.metricsRoute, false, 'not on the main listener')
  t.equal(loadGatewayConfig({ IDENTITY_SERVICE_TOKEN: TOKEN, GATEWAY_METRICS_PORT: '0' }).metrics, null, 'GATEWAY_METRICS_PORT=0: none')
  const exposed = loadGatewayConfig({ IDENTITY_SERVICE_TOKEN: TOKEN, GATEWAY_METRICS_ON_MAIN_LISTENER: 'true', GATEWAY_METRICS_TOKEN: 'm'.repeat(32) })
  t.match(exposed.plugin, { metricsRoute: true, metricsToken: 'm'.repeat(32) }, 'on the main listener with its token')
})

t.test('the metrics listener is a Portier listener like the main one: the same server timeouts', async (t) => {
  const discard = new Writable({ write (_chunk, _encoding, done) { done() } })
  const config = loadGatewayConfig({ IDENTITY_SERVICE_TOKEN: TOKEN, IDENTITY_PUBLIC_URL: 'http://127.0.0.1:1', IDENTITY_INTERNAL_URL: 'http://127.0.0.1:1', LOG_LEVEL: 'silent' })
  const main = await buildGatewayServer(config, { logStream: discard })
  const metrics = await buildMetricsServer(config, main.portierGateway, { logStream: discard })
  t.teardown(async () => { await Promise.all([main.close(), metrics.close()]) })
  await Promise.all([main.listen({ host: '127.0.0.1', port: 0 }), metrics.listen({ host: '127.0.0.1', port: 0 })])
  const settings = (app: typeof metrics) => ({
    headersTimeout: app.server.headersTimeout,
    requestTimeout: app.server.requestTimeout,
    keepAliveTimeout: app.server.keepAliveTimeout,
    timeout: app.server.timeout,
    maxHeadersCount: app.server.maxHeadersCount,
    connectionTimeout: app.initialConfig.connectionTimeout,
    keepAliveTimeoutOption: app.initialConfig.keepAliveTimeout
  })
  t.same(settings(metrics), settings(main as unknown as typeof metrics), 'every timeout and limit of the server')
})

t.test('the server refuses to start on bad configuration (exit 78)', async (t) => {
  const missing = spawnSync(...nodeCommand([SERVER]), { env: { PATH: process.env.PATH }, encoding: 'utf8' })
  t.equal(missing.status, 78, 'exit 78 without IDENTITY_SERVICE_TOKEN')
  t.match(missing.stderr, /IDENTITY_SERVICE_TOKEN: is required/, 'naming it')
  const dir = tempDir(t)
  const bad = join(dir, 'bad.yaml')
  writeFileSync(bad, 'upstreams:\n  - name: x\n    target: http://127.0.0.1:1\n    routes:\n      - { method: GET, path: /x, permission: "Not A Permission" }\n')
  const invalid = spawnSync(...nodeCommand([SERVER]), {
    env: { PATH: process.env.PATH, IDENTITY_SERVICE_TOKEN: TOKEN, GATEWAY_UPSTREAMS_FILE: bad }, encoding: 'utf8'
  })
  t.equal(invalid.status, 78, 'exit 78 on an invalid upstreams file')
  t.match(invalid.stderr, /bad\.yaml: upstreams\[0\]\.routes\[0\]\.permission/, 'naming the file and the path inside it')
  const aliasing = spawnSync(...nodeCommand([SERVER]), {
    env: { PATH: process.env.PATH, IDENTITY_SERVICE_TOKEN: TOKEN, GATEWAY_ALLOWED_UNUSUAL_HEADERS: 'x_portier_principal' }, encoding: 'utf8'
  })
  t.equal(aliasing.status, 78, 'exit 78 when an allowed unusual header name aliases one the gateway owns')
  t.match(aliasing.stderr, /allowedUnusualHeaders\[0\]: x_portier_principal reads as a header the gateway sets or strips/, 'naming it')
})

t.test('the standalone server: SIGHUP reloads, SIGTERM drains in-flight requests', async (t) => {
  const s = await startStack(t)
  const key = await s.createKey(['users:list', 'debug:read', 'tasks:list'])
  const dir = tempDir(t)
  const file = join(dir, 'upstreams.yaml')
  const config = mockUpstreams(s.upstreamUrl)
  const withoutTasks = { upstreams: config.upstreams.map((u) => ({ ...u, routes: u.routes.filter((r) => !r.path.startsWith('/tasks')) })) }
  writeFileSync(file, stringify(withoutTasks))
  const [port, metricsPort] = [await freePort(), await freePort()]
  const child = spawn(...nodeCommand([SERVER]), {
    env: {
      PATH: process.env.PATH,
      GATEWAY_HOST: '127.0.0.1',
      GATEWAY_PORT: String(port),
      GATEWAY_METRICS_PORT: String(metricsPort),
      GATEWAY_UPSTREAMS_FILE: file,
      GATEWAY_WATCH_UPSTREAMS: 'false',
      GATEWAY_SHUTDOWN_GRACE_SECONDS: '10',
      IDENTITY_PUBLIC_URL: s.publicUrl,
      IDENTITY_INTERNAL_URL: s.adminUrl,
      IDENTITY_SERVICE_TOKEN: s.serviceToken,
      IDENTITY_EVENTS_CHANNEL: s.config.eventsChannel,
      REDIS_URL: s.redis.url,
      LOG_LEVEL: 'info'
    },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  let output = ''
  child.stdout.on('data', (chunk: Buffer) => { output += chunk.toString() })
  child.stderr.on('data', (chunk: Buffer) => { output += chunk.toString() })
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
  t.teardown(() => { child.kill('SIGKILL') })
  const base = `http://127.0.0.1:${port}`
  for (let i = 0; i < 100 && !output.includes(`Server listening at ${base}`); i++) await new Promise((resolve) => setTimeout(resolve, 100))

  const headers = { 'x-api-key': key.key }
  assertJson(t, await http(`${base}/users?per_page=1`, { headers }), 200, 'serves the configured routes')
  assertProblem(t, await http(`${base}/tasks`, { headers }), 404, 'not_found', 'a route not in the file')
  t.equal((await http(`http://127.0.0.1:${metricsPort}/metrics`)).status, 200, 'its metrics listener serves /metrics')

  writeFileSync(file, stringify(config))
  child.kill('SIGHUP')
  for (let i = 0; i < 50 && !/upstreams reloaded/.test(output); i++) await new Promise((resolve) => setTimeout(resolve, 100))
  assertJson(t, await http(`${base}/tasks?per_page=1`, { headers }), 200, 'after SIGHUP the new route is served')

  const slow = http(`${base}/slow?delay_ms=1000`, { headers })
  await new Promise((resolve) => setTimeout(resolve, 200))
  child.kill('SIGTERM')
  const inFlight = await slow
  assertJson(t, inFlight, 200, 'the in-flight request completes during the drain')
  t.equal(await exited, 0, 'the process exits cleanly', { output: output.slice(-3000) })
  t.equal(await accepts(metricsPort), false, 'the metrics listener closed with it')
  t.notMatch(output, key.key, 'the key never appears in a log line')
})
