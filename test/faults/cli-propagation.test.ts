import t, { type Test } from 'tap'
import { spawn } from 'node:child_process'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { DEFAULT_UPSTREAMS_FILE } from '../helpers/gateway.js'
import { pollUntil } from '../helpers/gateway-auth.js'
import { adminClient, http, type HttpRequest } from '../helpers/http.js'
import { tempDir } from '../helpers/identity.js'
import { watchForLeaks } from '../helpers/leak-watch.js'
import { builtEntry, REPO_ROOT, startProcess, type ServiceProcess } from '../helpers/process.js'
import { startProcessStack } from '../helpers/process-stack.js'
import { freePort } from '../helpers/redis.js'
import { sidOf } from '../helpers/session-setup.js'

/**
 * Every change the `portier` CLI makes reaches a running gateway within 1 s, in both
 * shipped setups: `npm start` (one process, no Redis: the CLI's events travel through
 * the database's outbox, which identity relays on its in-process bus) and the split
 * deployment (separate processes on Redis: the CLI publishes on Redis itself, and
 * identity relays the outbox too). The gateways' caches are set to an hour, so only
 * an event can explain a refusal within the bound. Each change is measured from the
 * moment the CLI printed its answer (the change is committed just before) to the
 * gateway's first answer reflecting it.
 */

const BOUND_MS = 1_000
const CLI_TIMEOUT_MS = 30_000
/** Long caches: a refusal within the bound is the event's doing, not a TTL's. */
const LONG_CACHES = {
  GATEWAY_KEY_CACHE_L1_TTL_SECONDS: '3600',
  GATEWAY_KEY_CACHE_L2_TTL_SECONDS: '3600',
  GATEWAY_NEGATIVE_CACHE_TTL_SECONDS: '300',
  GATEWAY_REVOCATION_SYNC_SECONDS: '3600'
}
/** OWASP's cheapest argon2id equivalence: the suite creates many users. */
const QUICK_ARGON2 = { IDENTITY_ARGON2_MEMORY_KIB: '7168', IDENTITY_ARGON2_TIME_COST: '5' }
const USERS_PATH = '/users?per_page=1'
const NOT_RELAYED = /no identity server relayed it/

const leaks = watchForLeaks()

interface CliRun {
  code: number | null
  stdout: string
  stderr: string
  json: any
  /** performance.now() when the answer appeared on stdout. */
  answeredAt: number
}

let cliRuns = 0

/** The compiled CLI in its own process, with exactly `env` (plus PATH), from the repository folder. */
async function portier (env: Record<string, string>, args: string[], input?: string): Promise<CliRun> {
  const child = spawn(process.execPath, [join(REPO_ROOT, 'bin', 'portier.js'), ...args], {
    cwd: REPO_ROOT, env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['pipe', 'pipe', 'pipe']
  })
  let stdout = ''
  let stderr = ''
  let answeredAt = Number.NaN
  child.stdout.on('data', (chunk: Buffer) => {
    if (stdout === '') answeredAt = performance.now()
    stdout += chunk.toString()
  })
  child.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString() })
  child.stdin.end(input)
  const timer = setTimeout(() => child.kill('SIGKILL'), CLI_TIMEOUT_MS)
  const code = await new Promise<number | null>((resolve) => child.once('close', resolve))
  clearTimeout(timer)
  leaks.source({ name: `portier ${args.slice(0, 2).join(' ')} (${++cliRuns})`, text: () => stderr })
  let json: unknown = null
  try { json = JSON.parse(stdout) } catch {}
  return { code, stdout, stderr, json, answeredAt }
}

/** What a case needs from a running system. */
interface System {
  gateway: string
  admin: ReturnType<typeof adminClient>
  /** The environment an operator's shell beside identity has. */
  cliEnv: Record<string, string>
}

interface Prepared {
  /** A request the gateway answers 200 now (its answer is cached). */
  request: HttpRequest
  path?: string
  /** The CLI command that changes the answer, and what the gateway answers after it. */
  args: string[]
  input?: string
  expect: number
}

let counter = 0
const unique = (what: string): string => `${what}-${++counter}`

async function createKey (system: System, permissions = ['users:list']): Promise<{ id: string, key: string }> {
  const created = await system.admin('POST', '/admin/keys', { name: unique('cli-case'), permissions, expires_at: new Date(Date.now() + 86_400_000).toISOString() })
  if (created.status !== 201) throw new Error(`key not created: ${created.text}`)
  leaks.secret(created.body.key)
  return { id: created.body.api_key.id, key: created.body.key }
}

/** A user with a role of its own that grants users:list, logged in through the gateway. */
async function loggedInUser (system: System): Promise<{ userId: string, role: string, bearer: string, sid: string }> {
  const role = unique('cli-role')
  await system.admin('PUT', `/admin/roles/${role}`, { permissions: ['users:list'] })
  const user = { email: `${unique('cli-user')}@example.com`, password: 'a long enough password' }
  const created = await system.admin('POST', '/admin/users', { ...user, roles: [role] })
  if (created.status !== 201) throw new Error(`user not created: ${created.text}`)
  const login = await http(`${system.gateway}/sessions`, { body: { session: user } })
  if (login.status !== 201) throw new Error(`login failed: ${login.text}`)
  leaks.secret(login.body.access_token, login.body.refresh_token)
  return { userId: created.body.user.id, role, bearer: login.body.access_token, sid: sidOf(login.body.access_token) }
}

const withKey = (key: string): HttpRequest => ({ headers: { 'x-api-key': key } })

/** Every CLI command that changes what a gateway may have cached or must refuse. */
const CASES: Array<[string, (system: System) => Promise<Prepared>]> = [
  ['keys revoke', async (s) => {
    const key = await createKey(s)
    return { request: withKey(key.key), args: ['keys', 'revoke', key.id], expect: 401 }
  }],
  ['keys disable', async (s) => {
    const key = await createKey(s)
    return { request: withKey(key.key), args: ['keys', 'disable', key.id], expect: 401 }
  }],
  ['keys update --permissions', async (s) => {
    const key = await createKey(s)
    return { request: withKey(key.key), args: ['keys', 'update', key.id, '--permissions', 'tasks:list'], expect: 403 }
  }],
  ['keys rotate --grace 0s (the old secret)', async (s) => {
    const key = await createKey(s)
    return { request: withKey(key.key), args: ['keys', 'rotate', key.id, '--grace', '0s'], expect: 401 }
  }],
  ['keys enable (a refused key, remembered as refused)', async (s) => {
    const key = await createKey(s)
    await s.admin('POST', `/admin/keys/${key.id}/disable`)
    // Refused, and the refusal cached for the negative TTL (300 s here).
    const refused = await pollUntil(async () => (await http(`${s.gateway}${USERS_PATH}`, withKey(key.key))).status === 401)
    if (refused === null) throw new Error('the disabled key was not refused')
    return { request: withKey(key.key), args: ['keys', 'enable', key.id], expect: 200 }
  }],
  ['sessions revoke', async (s) => {
    const user = await loggedInUser(s)
    return { request: { bearer: user.bearer }, args: ['sessions', 'revoke', user.sid], expect: 401 }
  }],
  ['sessions revoke-all --user', async (s) => {
    const user = await loggedInUser(s)
    return { request: { bearer: user.bearer }, args: ['sessions', 'revoke-all', '--user', user.userId], expect: 401 }
  }],
  ['users disable', async (s) => {
    const user = await loggedInUser(s)
    return { request: { bearer: user.bearer }, args: ['users', 'disable', user.userId], expect: 401 }
  }],
  ['users set-password', async (s) => {
    const user = await loggedInUser(s)
    return { request: { bearer: user.bearer }, args: ['users', 'set-password', user.userId, '--password-stdin'], input: 'another long password\n', expect: 401 }
  }],
  ['users set-roles (the token predates the change)', async (s) => {
    const user = await loggedInUser(s)
    return { request: { bearer: user.bearer }, args: ['users', 'set-roles', user.userId, '--roles', ''], expect: 401 }
  }],
  ['roles set (a role the user holds loses the permission)', async (s) => {
    const user = await loggedInUser(s)
    return { request: { bearer: user.bearer }, args: ['roles', 'set', user.role, '--permissions', 'tasks:*'], expect: 401 }
  }]
]

/**
 * Runs every case: the credential answers 200 (so the gateway has it cached), the CLI
 * makes its change, and the gateway must answer `expect` within the bound.
 */
async function propagationTable (t: Test, system: System, setup: string): Promise<void> {
  const worst: number[] = []
  for (const [name, prepare] of CASES) {
    const prepared = await prepare(system)
    const url = `${system.gateway}${prepared.path ?? USERS_PATH}`
    t.equal((await http(url, prepared.request)).status, prepared.expect === 200 ? 401 : 200, `${name}: answered as before the change`)
    const cli = await portier(system.cliEnv, prepared.args, prepared.input)
    t.equal(cli.code, 0, `${name}: the CLI succeeded`, { stderr: cli.stderr })
    t.notMatch(cli.stderr, NOT_RELAYED, `${name}: the CLI saw its change relayed`)
    const after = await pollUntil(async () => (await http(url, prepared.request)).status === prepared.expect, { since: cli.answeredAt, timeoutMs: 5_000, intervalMs: 10 })
    t.ok(after !== null && after <= BOUND_MS, `${name}: the gateway answers ${prepared.expect} ${String(after)} ms after the CLI's answer (bound ${BOUND_MS} ms)`)
    if (after !== null) worst.push(after)
  }
  t.comment(`${setup}: ${CASES.length} CLI changes, from the CLI's answer to the gateway's: worst ${Math.max(...worst)} ms, median ${[...worst].sort((a, b) => a - b)[Math.floor(worst.length / 2)]} ms`)
}

/** `npm start` as shipped (no Redis), on free ports and a temporary data folder. */
async function startDemo (t: Test, dir: string): Promise<{ process: ServiceProcess, env: Record<string, string>, system: System }> {
  const [gatewayPort, identityPort, adminPort, mockPort] = await Promise.all([freePort(), freePort(), freePort(), freePort()])
  const upstreams = join(dir, 'upstreams.yaml')
  writeFileSync(upstreams, readFileSync(DEFAULT_UPSTREAMS_FILE, 'utf8').replaceAll('http://127.0.0.1:4000', `http://127.0.0.1:${mockPort}`))
  const env = {
    GATEWAY_PORT: String(gatewayPort),
    IDENTITY_PORT: String(identityPort),
    IDENTITY_ADMIN_PORT: String(adminPort),
    UPSTREAM_MOCK_PORT: String(mockPort),
    IDENTITY_DATABASE_PATH: join(dir, 'data', 'identity.db'),
    GATEWAY_UPSTREAMS_FILE: upstreams,
    LOG_LEVEL: 'info',
    ...QUICK_ARGON2,
    ...LONG_CACHES
  }
  const demo = startProcess(t, 'dist/demo/start.js', env, /Ctrl-C stops Portier/)
  t.ok(await demo.ready, 'npm start is up', { stderr: demo.stderr().slice(-2000) })
  leaks.source({ name: 'npm start', text: () => demo.stdout().replace(/^(?!\{).*$/gm, '') + demo.stderr() })
  const { adminToken } = JSON.parse(readFileSync(join(dir, 'data', 'credentials.json'), 'utf8')) as { adminToken: string }
  leaks.secret(adminToken)
  return {
    process: demo,
    env,
    system: { gateway: `http://127.0.0.1:${gatewayPort}`, admin: adminClient(`http://127.0.0.1:${adminPort}`, adminToken), cliEnv: env }
  }
}

function outboxRows (databasePath: string): number {
  const db = new Database(databasePath, { readonly: true })
  try { return db.prepare('SELECT count(*) FROM event_outbox').pluck().get() as number } finally { db.close() }
}

t.before(() => {
  if (!existsSync(builtEntry('dist/cli/portier.js'))) throw new Error('dist/ is missing: run `npm run build` (npm test does)')
})

t.test(`npm start (no Redis): each CLI change reaches the gateway within ${BOUND_MS} ms`, async (t) => {
  const demo = await startDemo(t, tempDir(t, 'portier-cli-propagation-'))
  await propagationTable(t, demo.system, 'npm start')

  await t.test('a signing key rotated by the CLI signs tokens the gateway accepts at once', async (t) => {
    const user = await loggedInUser(demo.system)
    const cli = await portier(demo.system.cliEnv, ['signing-keys', 'rotate'])
    t.equal(cli.code, 0)
    t.notMatch(cli.stderr, NOT_RELAYED)
    const login = await http(`${demo.system.gateway}/sessions`, { body: { session: { email: (await demo.system.admin('GET', `/admin/users/${user.userId}`)).body.user.email, password: 'a long enough password' } } })
    leaks.secret(login.body.access_token, login.body.refresh_token)
    t.equal(JSON.parse(Buffer.from((login.body.access_token as string).split('.')[0] as string, 'base64url').toString()).kid, cli.json.signing_key.kid, 'the new key signs')
    const accepted = await pollUntil(async () => (await http(`${demo.system.gateway}${USERS_PATH}`, { bearer: login.body.access_token })).status === 200, { since: cli.answeredAt, timeoutMs: 5_000 })
    t.ok(accepted !== null && accepted <= BOUND_MS, `accepted ${String(accepted)} ms after the CLI's answer`)
  })

  t.equal(outboxRows(demo.env.IDENTITY_DATABASE_PATH), 0, 'every relayed event left the outbox')
})

t.test('npm start stopped: the CLI says the change waits, and the next start relays it', async (t) => {
  const dir = tempDir(t, 'portier-cli-propagation-')
  const first = await startDemo(t, dir)
  const key = await createKey(first.system)
  first.process.child.kill('SIGINT')
  t.equal((await first.process.exited).code, 0, 'stopped')

  const cli = await portier(first.env, ['keys', 'revoke', key.id])
  t.equal(cli.code, 0, 'the change is made')
  t.match(cli.json, { api_key: { id: key.id, status: 'revoked' } })
  t.match(cli.stderr, /^warning: the change is saved, but no identity server relayed it to the gateways within 1 s \(is Portier running, on this IDENTITY_DATABASE_PATH\?\)/m,
    'the operator learns that no gateway was told yet')
  t.equal(outboxRows(first.env.IDENTITY_DATABASE_PATH), 1, 'the event waits in the outbox')

  const again = await startDemo(t, dir)
  t.equal(outboxRows(again.env.IDENTITY_DATABASE_PATH), 0, 'the next start relayed it')
  t.equal((await http(`${again.system.gateway}${USERS_PATH}`, withKey(key.key))).status, 401, 'and the key is refused')
})

t.test(`split deployment on Redis: each CLI change reaches the gateway within ${BOUND_MS} ms`, async (t) => {
  const s = await startProcessStack(t, { leaks, identityEnv: QUICK_ARGON2, gatewayEnv: LONG_CACHES })
  const system: System = { gateway: s.gateway.url, admin: s.identity.admin, cliEnv: s.env.identity }
  await propagationTable(t, system, 'split deployment on Redis')

  await t.test('identity down: the CLI still reaches the gateway through Redis; identity relays the outbox at its next start', async (t) => {
    const key = await createKey(system)
    const other = await createKey(system)
    for (const k of [key, other]) t.equal((await http(`${s.gateway.url}${USERS_PATH}`, withKey(k.key))).status, 200, 'cached while identity is up')
    await s.identity.stop()

    const direct = await portier(system.cliEnv, ['keys', 'revoke', key.id])
    t.equal(direct.code, 0)
    t.equal(direct.stderr, '', 'Redis reachable: published directly, nothing to warn about')
    // Evicted, and identity cannot vouch for it: refused closed (503), as any uncached key while identity is down.
    const refused = await pollUntil(async () => (await http(`${s.gateway.url}${USERS_PATH}`, withKey(key.key))).status === 503, { since: direct.answeredAt, timeoutMs: 5_000 })
    t.ok(refused !== null && refused <= BOUND_MS, `no longer served from the cache ${String(refused)} ms after the CLI's answer, identity being down (503)`)

    // A CLI that cannot reach Redis: only the outbox carries the change.
    const unreachable = await portier({ ...system.cliEnv, REDIS_URL: `redis://127.0.0.1:${await freePort()}` }, ['keys', 'revoke', other.id])
    t.equal(unreachable.code, 0)
    t.match(unreachable.stderr, /^warning: Redis \(REDIS_URL\) is not reachable/m)
    t.equal((await http(`${s.gateway.url}${USERS_PATH}`, withKey(other.key))).status, 200, 'the gateway has not heard of it yet (its cache holds the key)')
    t.equal(outboxRows(s.identity.databasePath), 2, 'both events wait in the outbox')

    await s.identity.restart()
    const restartedAt = performance.now()
    const relayed = await pollUntil(async () => (await http(`${s.gateway.url}${USERS_PATH}`, withKey(other.key))).status === 401, { since: restartedAt, timeoutMs: 5_000 })
    t.ok(relayed !== null && relayed <= BOUND_MS, `identity relayed it at start: refused ${String(relayed)} ms after identity answered again`)
    t.equal(outboxRows(s.identity.databasePath), 0, 'the outbox is empty again')
  })
})

t.test('no log line or CLI output holds a secret', async (t) => {
  await leaks.assertNoLeaks(t)
})
