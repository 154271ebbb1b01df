import type { Test } from 'tap'
import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { DEMO_STARTED, demoEnvironment } from './demo.js'
import { pollUntil } from './gateway-auth.js'
import { adminClient, http, type HttpRequest } from './http.js'
import type { LeakWatch } from './leak-watch.js'
import { REPO_ROOT, startProcess, type ServiceProcess } from './process.js'
import { sidOf } from './tokens.js'
import { nodeCommand } from './node-command.js'

/**
 * What the CLI propagation suites share (test/faults/cli-propagation*.test.ts): the
 * compiled CLI as a process, `npm start` as shipped, and the table of every CLI
 * command that changes what a gateway may have cached or must refuse.
 */

export const BOUND_MS = 1_000
const CLI_TIMEOUT_MS = 30_000
/** Long caches: a refusal within the bound is the event's doing, not a TTL's. */
export const LONG_CACHES = {
  GATEWAY_KEY_CACHE_L1_TTL_SECONDS: '3600',
  GATEWAY_KEY_CACHE_L2_TTL_SECONDS: '3600',
  GATEWAY_NEGATIVE_CACHE_TTL_SECONDS: '300',
  GATEWAY_REVOCATION_SYNC_SECONDS: '3600'
}
/** OWASP's cheapest argon2id equivalence: the suite creates many users. */
export const QUICK_ARGON2 = { IDENTITY_ARGON2_MEMORY_KIB: '7168', IDENTITY_ARGON2_TIME_COST: '5' }
export const USERS_PATH = '/users?per_page=1'
export const NOT_RELAYED = /no identity server relayed it/

export interface CliRun {
  code: number | null
  stdout: string
  stderr: string
  json: any
  /** performance.now() when the answer appeared on stdout. */
  answeredAt: number
}

/** What a case needs from a running system. */
export interface System {
  gateway: string
  admin: ReturnType<typeof adminClient>
  /** The environment an operator's shell beside identity has. */
  cliEnv: Record<string, string>
}

export interface Prepared {
  /** A request the gateway answers 200 now (its answer is cached). */
  request: HttpRequest
  path?: string
  /** The CLI command that changes the answer, and what the gateway answers after it. */
  args: string[]
  input?: string
  expect: number
}

export const withKey = (key: string): HttpRequest => ({ headers: { 'x-api-key': key } })

/** How many events wait in the database's outbox. */
export function outboxRows (databasePath: string): number {
  const db = new Database(databasePath, { readonly: true })
  try { return db.prepare('SELECT count(*) FROM event_outbox').pluck().get() as number } finally { db.close() }
}

/** The suite's helpers, registering every process they start and every secret they see with `leaks`. */
export function cliPropagation (leaks: LeakWatch) {
  let cliRuns = 0

  /** The compiled CLI in its own process, with exactly `env` (plus PATH), from the repository folder. */
  async function portier (env: Record<string, string>, args: string[], input?: string): Promise<CliRun> {
    const child = spawn(...nodeCommand([join(REPO_ROOT, 'bin', 'portier.js'), ...args]), {
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

  let counter = 0
  const unique = (what: string): string => `${what}-${++counter}`

  async function createKey (system: System, permissions = ['users:list']): Promise<{ id: string, key: string }> {
    const created = await system.admin('POST', '/admin/keys', { name: unique('cli-case'), permissions, expires_at: new Date(Date.now() + 86_400_000).toISOString() })
    if (created.status !== 201) throw new Error(`key not created: ${created.text}`)
    leaks.secret(created.body.key)
    return { id: created.body.api_key.id, key: created.body.key }
  }

  /** A user with a role of its own that grants users:list, logged in through the gateway. */
  async function loggedInUser (system: System): Promise<{ userId: string, email: string, password: string, role: string, bearer: string, sid: string }> {
    const role = unique('cli-role')
    await system.admin('PUT', `/admin/roles/${role}`, { permissions: ['users:list'] })
    const user = { email: `${unique('cli-user')}@example.com`, password: 'a long enough password' }
    const created = await system.admin('POST', '/admin/users', { ...user, roles: [role] })
    if (created.status !== 201) throw new Error(`user not created: ${created.text}`)
    const login = await http(`${system.gateway}/sessions`, { body: { session: user } })
    if (login.status !== 201) throw new Error(`login failed: ${login.text}`)
    leaks.secret(login.body.access_token, login.body.refresh_token)
    return { userId: created.body.user.id, ...user, role, bearer: login.body.access_token, sid: sidOf(login.body.access_token) }
  }

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
    const setup = await demoEnvironment(t, { ...QUICK_ARGON2, ...LONG_CACHES }, dir)
    const env = setup.env
    const demo = startProcess(t, 'dist/demo/start.js', env, DEMO_STARTED)
    t.ok(await demo.ready, 'npm start is up', { stderr: demo.stderr().slice(-2000) })
    leaks.source({ name: 'npm start', text: () => demo.stdout().replace(/^(?!\{).*$/gm, '') + demo.stderr() })
    const { adminToken } = JSON.parse(readFileSync(join(setup.dir, 'credentials.json'), 'utf8')) as { adminToken: string }
    leaks.secret(adminToken)
    return {
      process: demo,
      env,
      system: { gateway: setup.gateway, admin: adminClient(setup.identityAdmin, adminToken), cliEnv: env }
    }
  }

  return { portier, createKey, loggedInUser, propagationTable, startDemo }
}
