import t from 'tap'
import { spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { ConfigError } from '../../common/config.js'
import { DEFAULT_SEED, loadUpstreamMockConfig } from '../../upstream-mock/config.js'
import { http } from '../helpers/http.js'
import { assertJson } from '../helpers/assert.js'
import { freePort } from '../helpers/redis.js'
import { REPO_ROOT, repoPath } from '../helpers/repo-root.js'
import { nodeCommand } from '../helpers/node-command.js'

/** The built entry point: `npm test` builds before tap runs. */
const SERVER = repoPath('dist/upstream-mock/server.js')
const START_TIMEOUT_MS = 20_000

interface Run { exitCode: number | null, signal: NodeJS.Signals | null, stdout: string, stderr: string }

/** Starts the server; `ready` resolves on its "upstream-mock ready" log line, `exited` when it ends. */
function startServer (args: string[], env: Record<string, string>) {
  const child = spawn(...nodeCommand([SERVER, ...args]), { cwd: REPO_ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  const exited = new Promise<Run>((resolve) => {
    child.once('exit', (exitCode, signal) => resolve({ exitCode, signal, stdout, stderr }))
  })
  const ready = new Promise<boolean>((resolve) => {
    const timer = setTimeout(() => resolve(false), START_TIMEOUT_MS)
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString()
      if (stdout.includes('"msg":"upstream-mock ready"')) { clearTimeout(timer); resolve(true) }
    })
    child.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString() })
    void exited.then(() => { clearTimeout(timer); resolve(false) })
  })
  return { child, ready, exited }
}

t.test('happy: `--users 10` starts on UPSTREAM_MOCK_PORT, answers, and exits 0 on SIGTERM', async (t) => {
  t.ok(existsSync(SERVER), 'dist/upstream-mock/server.js is built (npm run build)')
  const port = await freePort()
  const server = startServer(['--users', '10'], { UPSTREAM_MOCK_PORT: String(port), UPSTREAM_MOCK_USERS: '500', LOG_LEVEL: 'info' })
  t.teardown(() => { if (server.child.exitCode === null) server.child.kill('SIGKILL') })
  t.ok(await server.ready, 'ready')
  const health = await http(`http://127.0.0.1:${port}/healthz`)
  assertJson(t, health, 200)
  t.same(health.body, { status: 'ok' })
  const users = await http(`http://127.0.0.1:${port}/users?per_page=1`)
  t.equal(users.body.meta.total_count, 10, 'the flag wins over UPSTREAM_MOCK_USERS')
  server.child.kill('SIGTERM')
  const run = await server.exited
  t.equal(run.exitCode, 0, 'exit code 0', { stderr: run.stderr })
  t.match(run.stdout, /"signal":"SIGTERM","msg":"shutting down"/, 'logs the shutdown')
})

t.test('error: a bad flag or environment stops the server with a message', async (t) => {
  const flag = await startServer(['--users', '5'], { UPSTREAM_MOCK_PORT: '0' }).exited
  t.not(flag.exitCode, 0, '--users 5: refused')
  t.equal(flag.exitCode, 64, '--users 5: EX_USAGE')
  t.match(flag.stderr, /--users.*must be an integer from 10 to 100000/)
  const unknown = await startServer(['--userz', '10'], { UPSTREAM_MOCK_PORT: '0' }).exited
  t.equal(unknown.exitCode, 64, 'an unknown flag: EX_USAGE')
  t.match(unknown.stderr, /--userz[\s\S]*Usage: upstream-mock/, 'names the flag and prints the usage')
  const env = await startServer([], { UPSTREAM_MOCK_PORT: 'eighty', UPSTREAM_MOCK_USERS: '100001', LOG_LEVEL: 'chatty' }).exited
  t.equal(env.exitCode, 78, 'EX_CONFIG')
  t.match(env.stderr, /UPSTREAM_MOCK_PORT: must be integer/)
  t.match(env.stderr, /UPSTREAM_MOCK_USERS: must be <= 100000/)
  t.match(env.stderr, /LOG_LEVEL: must be one of/)
})

t.test('happy: configuration defaults and overrides', async (t) => {
  const listeners = {
    timeouts: { headersMs: 10_000, requestMs: 30_000, keepAliveMs: 5_000 },
    bufferedBodiesMaxBytes: 16_777_216,
    unreadBodies: { drainMaxBytes: 65_536, lingerMs: 5_000, lingerMaxBytes: 16_777_216 }
  }
  t.same(loadUpstreamMockConfig({}), { host: '127.0.0.1', port: 4000, users: 100, seed: DEFAULT_SEED, logLevel: 'info', logFormat: 'json', ...listeners }, 'defaults')
  t.same(loadUpstreamMockConfig({ UPSTREAM_MOCK_HOST: '0.0.0.0', UPSTREAM_MOCK_PORT: '4100', UPSTREAM_MOCK_USERS: '2000', UPSTREAM_MOCK_SEED: '7', LOG_LEVEL: 'warn', LOG_FORMAT: 'pretty' }),
    { host: '0.0.0.0', port: 4100, users: 2000, seed: 7, logLevel: 'warn', logFormat: 'pretty', ...listeners }, 'from the environment')
  t.equal(loadUpstreamMockConfig({ UPSTREAM_MOCK_USERS: '2000' }, { users: 10 }).users, 10, 'the flag wins')
  t.equal(loadUpstreamMockConfig({ UPSTREAM_MOCK_USERS: '' }).users, 100, 'empty means unset')
  t.throws(() => loadUpstreamMockConfig({ UPSTREAM_MOCK_USERS: '9' }), ConfigError)
  t.ok(Object.isFrozen(loadUpstreamMockConfig({})), 'frozen')
})
