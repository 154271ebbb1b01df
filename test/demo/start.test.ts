import t, { type Test } from 'tap'
import { spawn } from 'node:child_process'
import { existsSync, statSync } from 'node:fs'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { Redis } from 'ioredis'
import { DEMO_STARTED, demoEnvironment, type DemoEnvironment } from '../helpers/demo.js'
import { CONTENT_SECURITY_POLICY } from '../../console/security.js'
import { http } from '../helpers/http.js'
import { startProcess, type ServiceProcess } from '../helpers/process.js'
import { startRedis } from '../helpers/redis.js'

const STARTED = DEMO_STARTED

type Demo = DemoEnvironment & { process: ServiceProcess }

async function startDemo (t: Test, setup: DemoEnvironment): Promise<Demo> {
  const demo = startProcess(t, 'dist/demo/start.js', setup.env, STARTED)
  t.ok(await demo.ready, 'npm start prints its banner', { stderr: demo.stderr().slice(-2000) })
  return { ...setup, process: demo }
}

async function stop (demo: Demo, signal: NodeJS.Signals = 'SIGINT') {
  demo.process.child.kill(signal)
  return await demo.process.exited
}

/** The pasteable block of the first banner: from "Try it" to the Ctrl-C line, indentation removed. */
function printedShellLines (banner: string): string[] {
  const start = banner.indexOf('Try it:')
  const end = banner.search(STARTED)
  return banner.slice(banner.indexOf('\n', start) + 1, end).split('\n').map((line) => line.replace(/^ {2}/, '')).filter((line) => line !== '')
}

/** `200 {"users":[…` → the status and a pattern of the body where `…` matches anything. */
function expectation (comment: string): { status: number, body: RegExp } {
  const match = /^#\s+(\d{3}) (.*)$/.exec(comment)
  if (match === null) throw new Error(`not an expectation: ${comment}`)
  const pattern = (match[2] as string).split('…').map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('.*')
  return { status: Number(match[1]), body: new RegExp(`^${pattern}$`) }
}

/**
 * Runs the printed lines in one bash, exactly as printed, one after the other. curl
 * is wrapped only to report each answer's status on stderr (`%{stderr}`), which
 * leaves what the lines capture and print untouched.
 */
async function runPrinted (lines: string[]): Promise<{ outputs: string[], statuses: number[], code: number | null }> {
  const script = ['set -u', 'curl () { command curl -w \'%{stderr}@@status %{http_code}\\n\' "$@"; }']
  lines.forEach((line, index) => { script.push(`printf '\\n@@line ${index}\\n'`, line) })
  const child = spawn('bash', ['-c', script.join('\n')], { stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (chunk: Buffer) => { stdout += chunk.toString() })
  child.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString() })
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve))
  const outputs = lines.map(() => '')
  for (const part of stdout.split('\n@@line ').slice(1)) {
    const newline = part.indexOf('\n')
    outputs[Number(part.slice(0, newline))] = part.slice(newline + 1).trim()
  }
  const statuses = [...stderr.matchAll(/@@status (\d{3})/g)].map((m) => Number(m[1]))
  return { outputs, statuses, code }
}

function secretsIn (banner: string): string[] {
  const passwords = [...banner.matchAll(/password (\S+)/g)].map((m) => m[1] as string)
  const keys = [...banner.matchAll(/\b(ptk_[A-Za-z0-9_]+)/g)].map((m) => m[1] as string)
  return [...new Set([...passwords, ...keys])]
}

function logLines (stdout: string): string[] {
  return stdout.split('\n').filter((line) => line.startsWith('{'))
}

t.test('npm start on a fresh folder: demo accounts printed once, every printed curl line answers as printed', async (t) => {
  const setup = await demoEnvironment(t)
  const demo = await startDemo(t, setup)
  const banner = demo.process.stdout()
  t.match(banner, /events in process \(REDIS_URL unset\)/, 'no Redis: the in-process event bus')
  t.match(banner, `gateway, the one base URL   ${setup.gateway}`, 'the gateway address')

  const lines = printedShellLines(banner)
  const commands = lines.filter((line) => !line.startsWith('#'))
  const expectations = lines.filter((line) => /^#\s+\d{3} /.test(line)).map(expectation)
  t.equal(expectations.length, 7, 'seven examples: key, login, admin API with the access token, token + inflection, refresh via /jetons, user login, 403')
  t.match(lines.join('\n'), /-H 'x-api-key: ptk_/, 'one lists users with the key')
  t.match(lines.join('\n'), /\/jetons/, 'one refreshes through /jetons')
  t.match(lines.join('\n'), /x-api-inflection: camel/, 'one asks for an inflection')
  t.match(lines.join('\n'), new RegExp(`curl -s ${setup.identityAdmin}/admin/keys -H "authorization: Bearer \\$AT"`),
    'one calls the admin API with the demo admin\'s access token, not the admin token')
  t.match(banner, /admin@example\.com {3}password \S+ {3}\(role admin: every permission; role operator: admin:\*, so their access token also opens the admin API\)/,
    'the banner says the admin is an operator')

  const run = await runPrinted(commands)
  t.equal(run.code, 0, 'the lines run without a shell error')
  t.same(run.statuses, expectations.map((e) => e.status), 'each curl answers with the status printed under it')
  // Commands and their expectation comments alternate; lines that only set variables print nothing.
  const printed = run.outputs.filter((output, index) => !/^\w+=\$\(node /.test(commands[index] as string) || output !== '')
  t.equal(printed.length, expectations.length, 'one answer per example')
  printed.forEach((output, index) => {
    const { body } = expectations[index] as { body: RegExp }
    t.match(output, body, `answer ${index + 1} reads as printed`)
  })
  const operated = JSON.parse(printed[2] as string)
  t.same(operated.api_keys.map((k: { name: string, origin: string }) => [k.name, k.origin]), [['demo-key', 'seed']],
    'the operator lists the demo key on the admin API, made by the seeding')
  const denied = JSON.parse(printed[6] as string)
  t.equal(denied.missing_permission, 'users:list', 'the 403 names users:list')

  const documentation = await http(`${setup.gateway}/openapi.json`)
  t.equal(documentation.status, 200, 'the API documentation the banner points to is served')
  t.ok(documentation.body.paths['/users'], 'and documents /users')
  t.match(banner, `console, in a browser       ${setup.gateway}/console`, 'the banner names the console, through the gateway')
  const signIn = await http(`${setup.gateway}/console/sign-in`, { headers: { accept: 'text/html' } })
  t.equal(signIn.status, 200, 'the gateway serves the console\'s sign-in page')
  t.equal(signIn.headers['content-security-policy'], CONTENT_SECURITY_POLICY, 'with its CSP')
  t.match(signIn.headers['set-cookie'], /^portier-console=.*; HttpOnly; SameSite=Strict/, 'and its cookie, without Secure on plain http')
  t.match(banner, `gateway metrics, private    ${setup.metrics}/metrics`, 'the banner names the private metrics listener')
  const metrics = await http(`${setup.metrics}/metrics`)
  t.equal(metrics.status, 200, 'which serves the Prometheus text, on loopback')
  t.match(metrics.text, /^portier_gateway_requests_total\{/m, 'with the gateway\'s series')
  t.equal((await http(`${setup.gateway}/metrics`)).status, 404, 'and /metrics is not on the base URL')

  const secrets = secretsIn(banner)
  t.equal(secrets.length, 3, 'two passwords and one key printed')
  for (const line of logLines(banner)) {
    for (const secret of secrets) if (line.includes(secret)) t.fail(`a log line carries a secret: ${line.slice(0, 200)}`)
  }
  const credentials = join(setup.databasePath, '..', 'credentials.json')
  t.equal(statSync(credentials).mode & 0o777, 0o600, 'the generated credentials file is readable by its owner only')

  const exit = await stop(demo)
  t.equal(exit.code, 0, 'Ctrl-C (SIGINT) exits 0')
  t.notOk(existsSync(`${setup.databasePath}-wal`), 'the database was closed (its WAL checkpointed and removed)')
  const db = new Database(setup.databasePath, { readonly: true })
  t.teardown(() => { db.close() })
  t.equal((db.prepare('PRAGMA integrity_check').pluck().get() as string), 'ok', 'the database is intact')

  t.test('a second start reuses the data and prints no new secret', async (t) => {
    const again = await startDemo(t, setup)
    const text = again.process.stdout()
    t.match(text, /holds 2 users and 1 API keys from an earlier start; no new secret is printed/)
    t.notMatch(text, /password \S+ {3}/, 'no password printed')
    t.notMatch(text, /ptk_/, 'no key printed')
    for (const secret of secrets) t.notOk(text.includes(secret), 'nothing of the first start is printed again')
    const key = secrets.find((s) => s.startsWith('ptk_')) as string
    const users = await http(`${setup.gateway}/users?per_page=1`, { headers: { 'x-api-key': key } })
    t.equal(users.status, 200, 'the first start\'s key still works')
    t.equal((await stop(again)).code, 0)
  })
})

t.test('Ctrl-C lets a request in flight finish, then exits', async (t) => {
  const demo = await startDemo(t, await demoEnvironment(t))
  const admin = /admin@example\.com {3}password (\S+)/.exec(demo.process.stdout())?.[1] as string
  const login = await http(`${demo.gateway}/sessions`, { method: 'POST', body: { session: { email: 'admin@example.com', password: admin } } })
  t.equal(login.status, 201, 'the demo admin logs in')
  const slow = http(`${demo.gateway}/slow?delay_ms=1500`, { headers: { authorization: `Bearer ${login.body.access_token}` } })
  await new Promise((resolve) => setTimeout(resolve, 300))
  const exited = stop(demo)
  const answer = await slow
  t.equal(answer.status, 200, 'the in-flight request completes during the drain')
  t.same(answer.body, { waited_ms: 1500 })
  t.equal((await exited).code, 0, 'then the process exits 0')
  t.notOk(existsSync(`${demo.databasePath}-wal`), 'and the database is closed')
})

t.test('with REDIS_URL set the same start uses Redis for events and the key cache', async (t) => {
  const redis = await startRedis(t)
  const demo = await startDemo(t, await demoEnvironment(t, { REDIS_URL: redis.url, IDENTITY_EVENTS_CHANNEL: 'demo-test:events' }))
  t.match(demo.process.stdout(), /events through Redis/)
  const ready = await http(`${demo.gateway}/readyz`)
  t.equal(ready.body.checks.redis, 'up', 'the gateway reports Redis up')
  const client = new Redis(redis.url)
  t.teardown(() => { client.disconnect() })
  const [, subscribers] = await client.pubsub('NUMSUB', 'demo-test:events') as [string, number]
  t.ok(subscribers >= 1, 'the gateway subscribes to identity\'s channel on Redis')
  const key = /(ptk_[A-Za-z0-9_]+)/.exec(demo.process.stdout())?.[1] as string
  t.equal((await http(`${demo.gateway}/users?per_page=1`, { headers: { 'x-api-key': key } })).status, 200)
  t.ok((await client.dbsize()) > 0, 'a verified key is cached in Redis (L2)')
  t.equal((await stop(demo)).code, 0)
})

t.test('bad configuration stops the start with exit 78, naming the variable', async (t) => {
  const setup = await demoEnvironment(t, { GATEWAY_PORT: 'eighty', IDENTITY_ARGON2_TIME_COST: '0' })
  const demo = startProcess(t, 'dist/demo/start.js', setup.env, STARTED)
  const exit = await demo.exited
  t.equal(exit.code, 78, 'EX_CONFIG')
  t.match(demo.stderr(), /IDENTITY_ARGON2_TIME_COST/, 'names the identity variable')
  t.notOk(existsSync(setup.databasePath), 'nothing was created')
})

t.test('a refusal while building identity (signing keys the secret cannot open) is exit 78 too, not a stack', async (t) => {
  const setup = await demoEnvironment(t, { IDENTITY_SIGNING_KEY_ENCRYPTION_KEY: 'e'.repeat(40) })
  const first = await startDemo(t, setup)
  t.equal((await stop(first)).code, 0)
  const { IDENTITY_SIGNING_KEY_ENCRYPTION_KEY: _, ...withoutKey } = setup.env
  const again = startProcess(t, 'dist/demo/start.js', withoutKey, STARTED)
  const exit = await again.exited
  t.equal(exit.code, 78, 'EX_CONFIG')
  t.match(again.stderr(), /IDENTITY_SIGNING_KEY_ENCRYPTION_KEY/, 'names the variable')
  t.notMatch(again.stderr(), /\n\s+at /, 'no stack trace')
})
