import t from 'tap'
import { spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { randomBytes } from 'node:crypto'
import { openDatabase } from '../../identity/store/database.js'
import { startIdentity, tempDir } from '../helpers/identity.js'
import { assertStatus } from '../helpers/assert.js'
import { postKeyUsage, postLogin, postVerifyKey, refreshTokens, usageReport } from '../helpers/session-setup.js'
import { freePort, startRedis } from '../helpers/redis.js'
import { watchEvents } from '../helpers/events.js'
import { runPortierHere } from '../helpers/cli.js'
import { REPO_ROOT } from '../helpers/repo-root.js'
import { nodeCommand } from '../helpers/node-command.js'
import { WITH_SIGNING_KEY_ENCRYPTION } from '../helpers/signing-key-encryption.js'

/**
 * The ops CLI as operators run it: the compiled `bin/portier.js` in a child process,
 * on a temporary database that a real identity server opens too. Cases that only
 * check one command's answer run `runPortier` in this process (the same code
 * without a Node start-up each), to keep the suite quick.
 */
const ROOT = REPO_ROOT
// What operators run: bin/portier.js over dist/, which `npm test` builds before tap starts.
const BIN = join(ROOT, 'bin', 'portier.js')
/** One CLI run is a Node start-up plus argon2: generous for a loaded CI machine. */
const RUN_TIMEOUT_MS = 30_000

interface CliResult { code: number | null, stdout: string, stderr: string, json: any }
type Tap = Pick<typeof t, 'equal'>

/** Runs `portier args…` with only the given environment (no IDENTITY_ADMIN_TOKEN, no inherited REDIS_URL). */
async function portier (env: Record<string, string>, args: string[], input?: string): Promise<CliResult> {
  const child = spawn(...nodeCommand([BIN, ...args]), {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['pipe', 'pipe', 'pipe']
  })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (chunk: Buffer) => { stdout += chunk.toString() })
  child.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString() })
  child.stdin.end(input)
  const timer = setTimeout(() => child.kill('SIGKILL'), RUN_TIMEOUT_MS)
  const code = await new Promise<number | null>((resolve) => child.once('close', (c) => resolve(c)))
  clearTimeout(timer)
  let json: unknown = null
  try { json = stdout === '' ? null : JSON.parse(stdout) } catch {}
  return { code, stdout, stderr, json }
}

/** The same command in this process, with captured streams. */
async function portierHere (env: Record<string, string>, args: string[], input?: string): Promise<CliResult> {
  const { code, stdout, stderr } = await runPortierHere(args, env, input)
  let json: unknown = null
  try { json = stdout === '' ? null : JSON.parse(stdout) } catch {}
  return { code, stdout, stderr, json }
}

function exits (t: Tap, result: CliResult, code: number, what = 'exit code'): void {
  t.equal(result.code, code, what, { stderr: result.stderr })
}

/** `args` for an assertion message (printed even on success), with any --password value masked. */
const commandLine = (args: string[]): string => args.map((arg, i) => (args[i - 1] === '--password' ? '***' : arg)).join(' ')

/** A CLI environment on a fresh temporary database, initialised as identity's server does (the CLI never creates one). */
function cliEnv (t: Parameters<typeof tempDir>[0], extra: Record<string, string> = {}): Record<string, string> {
  const path = join(tempDir(t, 'portier-cli-'), 'identity.db')
  openDatabase(path).close()
  return { IDENTITY_DATABASE_PATH: path, ...WITH_SIGNING_KEY_ENCRYPTION, ...extra }
}

/** An environment naming a database that does not exist. */
function missingDatabaseEnv (t: Parameters<typeof tempDir>[0]): Record<string, string> {
  return { IDENTITY_DATABASE_PATH: join(tempDir(t, 'portier-cli-'), 'identity.db'), ...WITH_SIGNING_KEY_ENCRYPTION }
}

t.before(() => {
  if (!existsSync(join(ROOT, 'dist', 'cli', 'portier.js'))) throw new Error('dist/ is missing: run `npm run build` (npm test does)')
})

t.test('happy: roles, users and keys made by the CLI work in a server on the same database', async (t) => {
  const env = cliEnv(t)
  const server = await startIdentity(t, {}, { databasePath: env.IDENTITY_DATABASE_PATH as string })

  const role = await portier(env, ['roles', 'set', 'reader', '--permissions', 'users:list,tasks:*'])
  exits(t, role, 0)
  t.match(role.json, { role: { name: 'reader', permissions: ['tasks:*', 'users:list'], created_at: String } })
  t.equal(role.stderr, '', 'the server on this database relayed the change to its bus: nothing to warn about')

  const password = 'correct horse battery staple'
  const created = await portier(env, ['users', 'create', '--email', 'ada@example.com', '--roles', 'reader', '--password-stdin'], `${password}\n`)
  exits(t, created, 0)
  t.match(created.json, {
    user: { id: /^usr_/, email: 'ada@example.com', roles: ['reader'], permissions: ['tasks:*', 'users:list'], status: 'active', disabled_at: null }
  })
  t.notMatch(created.stdout + created.stderr, password, 'the password is never printed')
  const userId = created.json.user.id as string

  const shown = await portierHere(env, ['users', 'show', userId])
  t.same(shown.json, created.json, 'show prints the same view as create')
  const listed = await portierHere(env, ['--format', 'table', 'users', 'list'])
  exits(t, listed, 0)
  t.match(listed.stdout, /^ID\s+EMAIL\s+ROLES\s+STATUS/)
  t.match(listed.stdout, new RegExp(`${userId}\\s+ada@example\\.com\\s+reader\\s+active`))

  // The password read from stdin is the one the server checks at login.
  const session = await postLogin(server, { email: 'ada@example.com', password })
  assertStatus(t, session, 201)

  const key = await portier(env, ['keys', 'create', '--name', 'reporting', '--permissions', 'users:list', '--expires-in', '30d'])
  exits(t, key, 0)
  t.match(key.json, { api_key: { id: /^key_/, name: 'reporting', status: 'active', permissions: ['users:list'], rotation: null }, key: /^ptk_/, warnings: [] })
  t.match(key.stderr, /full key is shown only this once/)
  t.notMatch(key.stderr, /never expires/)
  const expiresAt = Date.parse(key.json.api_key.expires_at as string)
  t.ok(Math.abs(expiresAt - (Date.now() + 30 * 86_400_000)) < 60_000, '--expires-in 30d is 30 days from now')

  const verified = await postVerifyKey(server, key.json.key as string)
  assertStatus(t, verified, 200)
  t.same(verified.body, {
    valid: true,
    key: { id: key.json.api_key.id, name: 'reporting', permissions: ['users:list'], expires_at: key.json.api_key.expires_at, owner_user_id: null, policies: [] },
    deprecation: null
  })

  // What a gateway reports of the request it verified the key for.
  assertStatus(t, await postKeyUsage(server, usageReport([{ key: key.json.key as string, at: Date.now(), route: '/users', ip: '198.51.100.4' }])), 200, 'use reported')
  const keys = await portierHere(env, ['keys', 'list'])
  exits(t, keys, 0)
  t.match(keys.json, { api_keys: [{ id: key.json.api_key.id, key_prefix: key.json.api_key.key_prefix, last_used_at: String, last_used_route: '/users', last_used_ip: '198.51.100.4' }] })
  t.notMatch(keys.stdout, key.json.key as string, 'list never shows the secret')
  t.notMatch(keys.stdout, /hash/i)
})

t.test('keys: duplicate name, rotation with grace, revocation', async (t) => {
  const env = cliEnv(t)
  const server = await startIdentity(t, {}, { databasePath: env.IDENTITY_DATABASE_PATH as string })

  const first = await portierHere(env, ['keys', 'create', '--name', 'billing', '--permissions', 'invoices:read'])
  exits(t, first, 0)
  t.match(first.stderr, /^warning: this key never expires/m, 'a key without expiry is warned about on stderr')
  t.match(first.json, { warnings: [/never expires/] })
  const id = first.json.api_key.id as string
  const oldKey = first.json.key as string

  const duplicate = await portier(env, ['keys', 'create', '--name', 'billing', '--permissions', 'invoices:read'])
  exits(t, duplicate, 1)
  t.equal(duplicate.stdout, '')
  t.equal(duplicate.stderr, 'error: key_name_taken: An API key named billing already exists.\n')

  const rotated = await portier(env, ['keys', 'rotate', id, '--grace', '1h'])
  exits(t, rotated, 0)
  const newKey = rotated.json.key as string
  t.match(newKey, /^ptk_/)
  t.not(newKey, oldKey)
  t.match(rotated.json, { api_key: { id, rotation: { old_key_prefix: first.json.api_key.key_prefix, old_secret_use_count: 0 } } })
  const graceUntil = Date.parse(rotated.json.api_key.rotation.grace_until as string)
  t.ok(Math.abs(graceUntil - (Date.now() + 3_600_000)) < 60_000, '--grace 1h keeps the old secret for an hour')

  const old = await postVerifyKey(server, oldKey)
  t.match(old.body, { valid: true, key: { id }, deprecation: { deprecated_at: String, sunset_at: rotated.json.api_key.rotation.grace_until } })
  const current = await postVerifyKey(server, newKey)
  t.match(current.body, { valid: true, key: { id }, deprecation: null })
  assertStatus(t, await postKeyUsage(server, usageReport([{ key: oldKey, at: Date.now() }, { key: newKey, count: 4, at: Date.now() }])), 200, 'uses reported')

  const shown = await portierHere(env, ['keys', 'show', id])
  t.match(shown.json, { api_key: { rotation: { old_secret_use_count: 1, old_secret_last_used_at: String }, secrets: [{ use_count: 4 }, { use_count: 1 }] } },
    'use of the old secret is counted apart')
  t.notMatch(shown.stdout, newKey.slice(-20), 'show never prints a secret')

  const revoked = await portierHere(env, ['keys', 'revoke', id])
  exits(t, revoked, 0)
  t.match(revoked.json, { api_key: { id, status: 'revoked', revoked_at: String } })
  t.same((await postVerifyKey(server, newKey)).body, { valid: false, reason: 'revoked' })
  t.same((await postVerifyKey(server, oldKey)).body, { valid: false, reason: 'revoked' })

  const again = await portierHere(env, ['keys', 'rotate', id])
  exits(t, again, 1)
  t.match(again.stderr, /^error: key_revoked: /)
})

t.test('keys: update, disable and enable', async (t) => {
  const env = cliEnv(t)
  const created = await portierHere(env, ['keys', 'create', '--name', 'ops', '--permissions', 'a:read', '--expires-at', '2099-01-01T00:00:00Z'])
  exits(t, created, 0)
  const id = created.json.api_key.id as string

  const updated = await portierHere(env, ['keys', 'update', id, '--permissions', 'a:read,b:*', '--no-expiry'])
  exits(t, updated, 0)
  t.match(updated.json, { api_key: { permissions: ['a:read', 'b:*'], expires_at: null }, warnings: [/never expires/] })
  t.match(updated.stderr, /^warning: this key never expires/m)

  const disabled = await portierHere(env, ['keys', 'disable', id])
  t.match(disabled.json, { api_key: { status: 'disabled', disabled_at: String } })
  t.match(disabled.stderr, /^warning: the change is saved, but no identity server relayed it to the gateways within 1 s/m,
    'no server runs on this database: the operator learns that no gateway was told yet')
  const enabled = await portierHere(env, ['keys', 'enable', id])
  t.match(enabled.json, { api_key: { status: 'active', disabled_at: null } })
})

t.test('users: disabling ends sessions; sessions are listed and revoked', async (t) => {
  const env = cliEnv(t)
  const server = await startIdentity(t, {}, { databasePath: env.IDENTITY_DATABASE_PATH as string })
  // --password is the less safe form (shell history), still supported.
  const created = await portier(env, ['users', 'create', '--email', 'bob@example.com', '--password', 'hunter2hunter2'])
  exits(t, created, 0)
  t.notMatch(created.stdout + created.stderr, 'hunter2hunter2')
  const userId = created.json.user.id as string

  const first = await postLogin(server, { email: 'bob@example.com', password: 'hunter2hunter2' })
  const second = await postLogin(server, { email: 'bob@example.com', password: 'hunter2hunter2' })
  assertStatus(t, first, 201)
  assertStatus(t, second, 201)

  const listed = await portierHere(env, ['sessions', 'list', '--user', userId])
  exits(t, listed, 0)
  t.equal(listed.json.sessions.length, 2)
  t.match(listed.json.sessions, [{ user_id: userId, status: 'active' }, { user_id: userId, status: 'active' }])
  const limited = await portierHere(env, ['sessions', 'list', '--user', userId, '--limit', '1'])
  t.same(limited.json.sessions, listed.json.sessions.slice(0, 1), '--limit keeps the newest')
  t.same((await portierHere(env, ['sessions', 'list'])).json, listed.json, 'without --user: every user\'s, newest first')

  const one = await portierHere(env, ['sessions', 'revoke', listed.json.sessions[0].id])
  t.match(one.json, { session: { id: listed.json.sessions[0].id, status: 'revoked', revoked_reason: 'admin' } })

  const disabled = await portier(env, ['users', 'disable', userId])
  exits(t, disabled, 0)
  t.match(disabled.json, { user: { id: userId, status: 'disabled', disabled_at: String } })

  for (const tokens of [first.body, second.body]) {
    const refreshed = await refreshTokens(server, tokens)
    assertStatus(t, refreshed, 401)
    t.equal(refreshed.body.code, 'session_revoked')
  }
  const after = await portierHere(env, ['sessions', 'list', '--user', userId])
  t.ok(after.json.sessions.every((s: { status: string }) => s.status === 'revoked'), 'every session of the user is revoked')
  t.equal((await postLogin(server, { email: 'bob@example.com', password: 'hunter2hunter2' })).body.code, 'user_disabled')

  const enabled = await portierHere(env, ['users', 'enable', userId])
  t.match(enabled.json, { user: { status: 'active' } })
  const third = await postLogin(server, { email: 'bob@example.com', password: 'hunter2hunter2' })
  assertStatus(t, third, 201)

  const all = await portierHere(env, ['sessions', 'revoke-all', '--user', userId])
  exits(t, all, 0)
  t.equal(all.json.revoked.length, 1)

  const changed = await portierHere(env, ['users', 'set-password', userId, '--password-stdin'], 'a new passphrase\n')
  exits(t, changed, 0)
  t.equal((await postLogin(server, { email: 'bob@example.com', password: 'a new passphrase' })).status, 201)
  t.equal((await postLogin(server, { email: 'bob@example.com', password: 'hunter2hunter2' })).status, 401)
})

t.test('errors: problems from the services exit 1 with their code', async (t) => {
  const env = cliEnv(t)
  const cases: Array<[string[], RegExp]> = [
    [['users', 'show', 'usr_nobody'], /^error: user_not_found: No user has id usr_nobody\.\n$/],
    [['users', 'create', '--email', 'c@example.com', '--roles', 'ghost', '--password', 'long enough'], /^error: unknown_role: /],
    [['roles', 'show', 'ghost'], /^error: role_not_found: /],
    [['sessions', 'revoke', 'ses_nothing'], /^error: session_not_found: /],
    [['keys', 'create', '--name', 'past', '--permissions', 'a:b', '--expires-at', '2001-01-01T00:00:00Z'], /^error: expiry_in_past: /]
  ]
  for (const [args, stderr] of cases) {
    const result = await portierHere(env, args)
    exits(t, result, 1, commandLine(args))
    t.match(result.stderr, stderr)
    t.equal(result.stdout, '')
  }
})

t.test('bad usage exits 2 naming the option, before touching the database', async (t) => {
  const env = missingDatabaseEnv(t)
  const cases: Array<[string[], RegExp, string?]> = [
    [['users', 'create', '--email', 'not-an-email', '--password-stdin'], /^error: --email: must match format "email"/m, 'long enough password\n'],
    [['users', 'create', '--email', 'a@example.com', '--password', 'pw12345'], /^error: --password: must NOT have fewer than 8 characters/m],
    [['users', 'create', '--email', 'a@example.com', '--password-stdin'], /^error: --password-stdin: no password on standard input/m, ''],
    [['users', 'create', '--email', 'a@example.com'], /^error: a password is required/m],
    [['users', 'create', '--email', 'a@example.com', '--password', 'x', '--password-stdin'], /cannot be used with option '--password-stdin'/],
    [['users', 'list', '--frobnicate'], /^error: unknown option '--frobnicate'/m],
    [['users', 'set-roles', 'usr_x', '--roles', 'Admin!'], /^error: --roles: "Admin!" must match pattern/m],
    [['users', 'show', 'not an id'], /^error: argument <id>: must match pattern/m],
    [['keys', 'create', '--name', 'x'], /required option '--permissions <list>' not specified/],
    [['keys', 'create', '--name', 'x', '--permissions', 'tasks:?'], /^error: --permissions: "tasks:\?" must match pattern .* \(each one resource:action, resource:\* or \*\)$/m],
    [['keys', 'create', '--name', 'x', '--permissions', 'a:b', '--expires-in', '90'], /^error: --expires-in: "90" is not a duration/m],
    [['keys', 'create', '--name', 'x', '--permissions', 'a:b', '--expires-at', '2030-01-01'], /^error: --expires-at: must match format "date-time"/m],
    [['keys', 'create', '--name', 'x', '--permissions', 'a:b', '--expires-at', '2030-01-01T00:00:00Z', '--expires-in', '1d'], /cannot be used with option '--expires-in <duration>'/],
    [['keys', 'update', 'key_x'], /^error: nothing to change/m],
    [['keys', 'rotate', 'key_x', '--grace', '100d'], /^error: --grace: must be <= 7776000/m],
    [['sessions', 'list', '--limit', '5000'], /^error: --limit: must be <= 1000/m],
    [['--format', 'xml', 'users', 'list'], /argument 'xml' is invalid/],
    [['users', 'lsit'], /unknown command 'lsit'/]
  ]
  const results: CliResult[] = []
  for (const [args, stderr, input] of cases) {
    const result = await portierHere(env, args, input)
    exits(t, result, 2, commandLine(args))
    t.match(result.stderr, stderr, commandLine(args))
    t.equal(result.stdout, '', commandLine(args))
    results.push(result)
  }
  t.notMatch(results[1]?.stderr, 'pw12345', 'a rejected password is not echoed')

  // The same exit codes from a real process: one rule of the schemas, one of commander's.
  const [schema, commander] = await Promise.all([
    portier(env, ['keys', 'create', '--name', 'x', '--permissions', 'tasks:?']),
    portier(env, ['users', 'list', '--frobnicate'])
  ])
  exits(t, schema as CliResult, 2)
  t.match(schema?.stderr, /^error: --permissions: "tasks:\?" must match pattern/)
  exits(t, commander as CliResult, 2)
  t.match(commander?.stderr, /^error: unknown option '--frobnicate'/)
  t.notOk(existsSync(env.IDENTITY_DATABASE_PATH as string), 'no database was created')

  const help = await portierHere(env, ['--help'])
  exits(t, help, 0)
  t.match(help.stdout, /Usage: portier/)
  t.match(help.stdout, /users[\s\S]*roles[\s\S]*keys[\s\S]*sessions[\s\S]*signing-keys/)
})

t.test('config: the server validation without the HTTP credentials', async (t) => {
  // No IDENTITY_ADMIN_TOKEN or IDENTITY_SERVICE_TOKEN anywhere in this file's CLI runs; bad values still fail.
  const bad = await portier(cliEnv(t, { IDENTITY_ARGON2_MEMORY_KIB: '1024' }), ['users', 'list'])
  exits(t, bad, 78)
  t.match(bad.stderr, /^Invalid configuration \(identity environment\):\n {2}- IDENTITY_ARGON2_MEMORY_KIB: must be >= 7168/)
  t.equal(bad.stdout, '')
})

t.test('events: changes are published on Redis when REDIS_URL is set', async (t) => {
  const redis = await startRedis(t)
  const channel = `portier:test:cli:${randomBytes(6).toString('hex')}`
  const events = await watchEvents(t, { redisUrl: redis.url, eventsChannel: channel })
  const env = cliEnv(t, { REDIS_URL: redis.url, IDENTITY_EVENTS_CHANNEL: channel })

  const role = await portier(env, ['roles', 'set', 'ops', '--permissions', '*'])
  exits(t, role, 0)
  t.equal(role.stderr, '', 'no warning when Redis is reachable')
  t.match(await events.next('role.changed'), { role: 'ops', at: String })

  const key = await portierHere(env, ['keys', 'create', '--name', 'evented', '--permissions', 'a:b', '--expires-in', '1d'])
  const keyId = key.json.api_key.id as string
  exits(t, await portier(env, ['keys', 'revoke', keyId]), 0)
  t.match(await events.next('key.revoked'), { keyId })

  const user = await portierHere(env, ['users', 'create', '--email', 'eve@example.com', '--roles', 'ops', '--password-stdin'], 'eve password\n')
  const userId = user.json.user.id as string
  exits(t, await portierHere(env, ['users', 'disable', userId]), 0)
  t.match(await events.next('user.disabled'), { userId })

  const rotated = await portier(env, ['signing-keys', 'rotate'])
  exits(t, rotated, 0)
  t.match(await events.next('signing_key.rotated'), { kid: rotated.json.signing_key.kid })
  const signingKeys = await portierHere(env, ['signing-keys', 'list'])
  t.match(signingKeys.json, { signing_keys: [{ kid: rotated.json.signing_key.kid, status: 'active' }, { status: 'published' }] })
})

t.test('events: an unreachable Redis is a warning, not a failure', async (t) => {
  const env = cliEnv(t, { REDIS_URL: `redis://127.0.0.1:${await freePort()}` })
  const started = Date.now()
  const result = await portier(env, ['roles', 'set', 'ops', '--permissions', '*'])
  exits(t, result, 0)
  t.match(result.json, { role: { name: 'ops' } })
  t.match(result.stderr, /^warning: Redis \(REDIS_URL\) is not reachable/m)
  t.match(result.stderr, /^warning: invalidation event not published.*\(role\.changed\)$/m)
  t.notMatch(result.stderr, /redis:\/\//, 'the URL (which may hold a password) is not shown')
  t.ok(Date.now() - started < 15_000, 'the process ends soon after the 2 s wait')
})
