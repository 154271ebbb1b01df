import t, { type Test } from 'tap'
import Database from 'better-sqlite3'
import { join } from 'node:path'
import { PassThrough } from 'node:stream'
import { createPortierProgram } from '../../cli/program.js'
import { openDatabase } from '../../identity/store/database.js'
import type { AuditActorType } from '../../identity/services/audit-context.js'
import { iso, startIdentity, tempDir, fakeClock } from '../helpers/identity.js'
import { adminClient, http, type HttpAnswer } from '../helpers/http.js'
import { recordRoutes } from '../helpers/openapi.js'
import { runPortierHere } from '../helpers/cli.js'
import { WITH_SIGNING_KEY_ENCRYPTION } from '../helpers/signing-key-encryption.js'
import { sidOf } from '../helpers/tokens.js'

/**
 * Every route and command that changes something writes an audit record. The routes
 * are those the running apps registered (admin and public listeners, self-service
 * included), the commands those of the `portier` program: a new one without a recipe
 * below fails this test, and so does one whose call writes no record. /internal routes
 * are gateway bookkeeping (key checks, usage reports, the revocation feed) and change
 * nothing an operator set.
 */

const MUTATING = new Set(['POST', 'PUT', 'PATCH', 'DELETE'])
const DAY_MS = 86_400_000
const PASSWORD = 'a long enough password'
const INTERNAL = '/internal/'

interface Row { seq: number, action: string, outcome: string, actor_type: string, actor_id: string | null }

function recordsAfter (path: string, seq: number): Row[] {
  const db = new Database(path, { readonly: true })
  try {
    return db.prepare('SELECT seq, action, outcome, actor_type, actor_id FROM audit_log WHERE seq > ? ORDER BY seq').all(seq) as Row[]
  } finally {
    db.close()
  }
}

const lastSeq = (path: string): number => recordsAfter(path, 0).at(-1)?.seq ?? 0

let unique = 0
const next = (prefix: string): string => `${prefix}${++unique}`

// ---- Routes ----------------------------------------------------------------------

interface RouteContext {
  admin: ReturnType<typeof adminClient>
  publicUrl: string
  expiry: () => string
  user: () => Promise<{ id: string, email: string }>
  login: (email: string) => Promise<{ access_token: string, sid: string }>
  key: () => Promise<string>
}

type Call = () => Promise<HttpAnswer>
type RouteRecipe =
  | { actor: AuditActorType, prepare: (c: RouteContext) => Promise<Call> }
  | { readOnly: string }
  | { exempt: string }

const asUser = (c: RouteContext, token: string) => async (method: string, path: string, body?: unknown) =>
  await http(`${c.publicUrl}${path}`, { method, bearer: token, ...(body !== undefined ? { body } : {}) })

async function ownKey (c: RouteContext): Promise<{ me: ReturnType<typeof asUser>, id: string }> {
  const { email } = await c.user()
  const me = asUser(c, (await c.login(email)).access_token)
  const created = await me('POST', '/me/keys', { name: next('own'), permissions: ['tasks:read'], expires_at: c.expiry() })
  return { me, id: created.body.api_key.id as string }
}

const ROUTES: Record<string, RouteRecipe> = {
  'POST /admin/users': { actor: 'admin_token', prepare: async (c) => async () => await c.admin('POST', '/admin/users', { email: `${next('u')}@example.com`, password: PASSWORD, roles: [] }) },
  'PUT /admin/users/:id/roles': { actor: 'admin_token', prepare: async (c) => { const { id } = await c.user(); return async () => await c.admin('PUT', `/admin/users/${id}/roles`, { roles: [] }) } },
  'PUT /admin/users/:id/password': { actor: 'admin_token', prepare: async (c) => { const { id } = await c.user(); return async () => await c.admin('PUT', `/admin/users/${id}/password`, { password: `${PASSWORD}!` }) } },
  'POST /admin/users/:id/disable': { actor: 'admin_token', prepare: async (c) => { const { id } = await c.user(); return async () => await c.admin('POST', `/admin/users/${id}/disable`) } },
  'POST /admin/users/:id/enable': {
    actor: 'admin_token',
    prepare: async (c) => { const { id } = await c.user(); await c.admin('POST', `/admin/users/${id}/disable`); return async () => await c.admin('POST', `/admin/users/${id}/enable`) }
  },
  'DELETE /admin/users/:id/sessions': {
    actor: 'admin_token',
    prepare: async (c) => { const { id, email } = await c.user(); await c.login(email); return async () => await c.admin('DELETE', `/admin/users/${id}/sessions`) }
  },
  'PUT /admin/roles/:name': { actor: 'admin_token', prepare: async (c) => async () => await c.admin('PUT', `/admin/roles/${next('role')}`, { permissions: ['tasks:read'] }) },
  'PATCH /admin/roles/:name': {
    actor: 'admin_token',
    prepare: async (c) => { const name = next('role'); await c.admin('PUT', `/admin/roles/${name}`, { permissions: [] }); return async () => await c.admin('PATCH', `/admin/roles/${name}`, { permissions: ['tasks:*'] }) }
  },
  'DELETE /admin/roles/:name': {
    actor: 'admin_token',
    prepare: async (c) => { const name = next('role'); await c.admin('PUT', `/admin/roles/${name}`, { permissions: [] }); return async () => await c.admin('DELETE', `/admin/roles/${name}`) }
  },
  'POST /admin/keys': { actor: 'admin_token', prepare: async (c) => async () => await c.admin('POST', '/admin/keys', { name: next('key'), permissions: ['tasks:read'], expires_at: c.expiry() }) },
  'PATCH /admin/keys/:id': { actor: 'admin_token', prepare: async (c) => { const id = await c.key(); return async () => await c.admin('PATCH', `/admin/keys/${id}`, { permissions: ['tasks:*'] }) } },
  'POST /admin/keys/:id/disable': { actor: 'admin_token', prepare: async (c) => { const id = await c.key(); return async () => await c.admin('POST', `/admin/keys/${id}/disable`) } },
  'POST /admin/keys/:id/enable': {
    actor: 'admin_token',
    prepare: async (c) => { const id = await c.key(); await c.admin('POST', `/admin/keys/${id}/disable`); return async () => await c.admin('POST', `/admin/keys/${id}/enable`) }
  },
  'POST /admin/keys/:id/revoke': { actor: 'admin_token', prepare: async (c) => { const id = await c.key(); return async () => await c.admin('POST', `/admin/keys/${id}/revoke`) } },
  'POST /admin/keys/:id/rotate': { actor: 'admin_token', prepare: async (c) => { const id = await c.key(); return async () => await c.admin('POST', `/admin/keys/${id}/rotate`, { grace_seconds: 0 }) } },
  'DELETE /admin/sessions/:id': {
    actor: 'admin_token',
    prepare: async (c) => { const { email } = await c.user(); const { sid } = await c.login(email); return async () => await c.admin('DELETE', `/admin/sessions/${sid}`) }
  },
  'POST /admin/signing-keys/rotate': { actor: 'admin_token', prepare: async (c) => async () => await c.admin('POST', '/admin/signing-keys/rotate') },
  'POST /admin/audit/head/verify': { readOnly: 'checks a signed head against the trail' },
  'POST /sessions': {
    actor: 'user',
    prepare: async (c) => { const { email } = await c.user(); return async () => await http(`${c.publicUrl}/sessions`, { body: { session: { email, password: PASSWORD } } }) }
  },
  'DELETE /sessions/current': {
    actor: 'user',
    prepare: async (c) => { const { email } = await c.user(); const { access_token: token } = await c.login(email); return async () => await asUser(c, token)('DELETE', '/sessions/current') }
  },
  'POST /tokens': { exempt: 'a refresh continues the session its login recorded (a reused refresh token is refused, not a change)' },
  'POST /jetons': { exempt: 'the French path of POST /tokens' },
  'POST /me/keys': {
    actor: 'user',
    prepare: async (c) => {
      const { email } = await c.user()
      const me = asUser(c, (await c.login(email)).access_token)
      return async () => await me('POST', '/me/keys', { name: next('own'), permissions: ['tasks:read'], expires_at: c.expiry() })
    }
  },
  'POST /me/keys/:id/rotate': { actor: 'user', prepare: async (c) => { const { me, id } = await ownKey(c); return async () => await me('POST', `/me/keys/${id}/rotate`, {}) } },
  'POST /me/keys/:id/revoke': { actor: 'user', prepare: async (c) => { const { me, id } = await ownKey(c); return async () => await me('POST', `/me/keys/${id}/revoke`) } },
  'DELETE /me/sessions/:id': {
    actor: 'user',
    prepare: async (c) => {
      const { email } = await c.user()
      const other = await c.login(email)
      const me = asUser(c, (await c.login(email)).access_token)
      return async () => await me('DELETE', `/me/sessions/${other.sid}`)
    }
  },
  'POST /me/sessions/revoke-others': {
    actor: 'user',
    prepare: async (c) => {
      const { email } = await c.user()
      await c.login(email)
      const me = asUser(c, (await c.login(email)).access_token)
      return async () => await me('POST', '/me/sessions/revoke-others')
    }
  }
}

t.test('every mutating admin and public route writes an audit record naming its actor', async (t) => {
  const routesOf = recordRoutes(t)
  const clock = fakeClock()
  const identity = await startIdentity(t, {}, { clock })
  const admin = adminClient(identity.adminUrl, identity.adminToken)
  t.equal((await admin('PUT', '/admin/roles/member', { permissions: ['tasks:*'] })).status, 200)
  const c: RouteContext = {
    admin,
    publicUrl: identity.publicUrl,
    expiry: () => iso(clock.now() + 30 * DAY_MS),
    user: async () => {
      const email = `${next('user')}@example.com`
      const created = await admin('POST', '/admin/users', { email, password: PASSWORD, roles: ['member'] })
      return { id: created.body.user.id as string, email }
    },
    login: async (email) => {
      const answer = await http(`${identity.publicUrl}/sessions`, { body: { session: { email, password: PASSWORD } } })
      return { access_token: answer.body.access_token as string, sid: sidOf(answer.body.access_token as string) }
    },
    key: async () => (await admin('POST', '/admin/keys', { name: next('key'), permissions: ['tasks:read'], expires_at: iso(clock.now() + 30 * DAY_MS) })).body.api_key.id as string
  }

  const mutating = [...routesOf(identity.identity.adminApp), ...routesOf(identity.identity.publicApp)]
    .flatMap((route) => route.methods.filter((method) => MUTATING.has(method)).map((method) => `${method} ${route.url}`))
    .filter((route) => !route.split(' ')[1]?.startsWith(INTERNAL))
  t.ok(mutating.length >= 25, 'the running apps have their mutating routes')
  for (const route of Object.keys(ROUTES)) t.ok(mutating.includes(route), `${route}: a route of the running apps (no stale recipe)`)

  for (const route of mutating) {
    const recipe = ROUTES[route]
    if (recipe === undefined) {
      t.fail(`${route} has no recipe here: add one, and make its call record in the audit trail (identity/services/audited-services.ts)`)
      continue
    }
    if (!('actor' in recipe)) {
      if ('readOnly' in recipe) {
        const before = lastSeq(identity.databasePath)
        await admin('POST', route.split(' ')[1] as string, { head: 'not.a.jws' })
        t.same(recordsAfter(identity.databasePath, before), [], `${route} is read-only: ${recipe.readOnly}`)
      } else {
        t.pass(`${route} is not recorded: ${recipe.exempt}`)
      }
      continue
    }
    const call = await recipe.prepare(c)
    const before = lastSeq(identity.databasePath)
    const answer = await call()
    t.ok(answer.status >= 200 && answer.status < 300, `${route}: succeeds`, { status: answer.status, body: answer.text })
    const written = recordsAfter(identity.databasePath, before)
    t.ok(written.length > 0, `${route}: writes an audit record`)
    t.match(written[0], { outcome: 'success', actor_type: recipe.actor }, `${route}: ${written[0]?.action ?? 'nothing'} by ${recipe.actor}`)
  }
})

// ---- Commands ----------------------------------------------------------------------

interface CommandContext {
  run: (args: string[], input?: string) => Promise<{ code: number, stdout: string, stderr: string }>
  user: () => Promise<string>
  key: () => Promise<string>
  session: () => Promise<{ sid: string, userId: string }>
}

type CommandRecipe = { prepare: (c: CommandContext) => Promise<{ args: string[], input?: string }> } | { readOnly: true }

const READ_ONLY = { readOnly: true } as const

const COMMANDS: Record<string, CommandRecipe> = {
  'users create': { prepare: async () => ({ args: ['users', 'create', '--email', `${next('c')}@example.com`, '--password-stdin'], input: `${PASSWORD}\n` }) },
  'users list': READ_ONLY,
  'users show': READ_ONLY,
  'users set-roles': { prepare: async (c) => ({ args: ['users', 'set-roles', await c.user(), '--roles', 'member'] }) },
  'users set-password': { prepare: async (c) => ({ args: ['users', 'set-password', await c.user(), '--password-stdin'], input: `${PASSWORD}!\n` }) },
  'users disable': { prepare: async (c) => ({ args: ['users', 'disable', await c.user()] }) },
  'users enable': { prepare: async (c) => { const id = await c.user(); await c.run(['users', 'disable', id]); return { args: ['users', 'enable', id] } } },
  'roles set': { prepare: async () => ({ args: ['roles', 'set', next('role'), '--permissions', 'tasks:read'] }) },
  'roles list': READ_ONLY,
  'roles show': READ_ONLY,
  'roles delete': { prepare: async (c) => { const name = next('role'); await c.run(['roles', 'set', name, '--permissions', 'tasks:read']); return { args: ['roles', 'delete', name] } } },
  'keys create': { prepare: async () => ({ args: ['keys', 'create', '--name', next('key'), '--permissions', 'tasks:read', '--expires-in', '30d'] }) },
  'keys list': READ_ONLY,
  'keys show': READ_ONLY,
  'keys update': { prepare: async (c) => ({ args: ['keys', 'update', await c.key(), '--permissions', 'tasks:*'] }) },
  'keys disable': { prepare: async (c) => ({ args: ['keys', 'disable', await c.key()] }) },
  'keys enable': { prepare: async (c) => { const id = await c.key(); await c.run(['keys', 'disable', id]); return { args: ['keys', 'enable', id] } } },
  'keys revoke': { prepare: async (c) => ({ args: ['keys', 'revoke', await c.key()] }) },
  'keys rotate': { prepare: async (c) => ({ args: ['keys', 'rotate', await c.key(), '--grace', '0s'] }) },
  'sessions list': READ_ONLY,
  'sessions show': READ_ONLY,
  'sessions revoke': { prepare: async (c) => ({ args: ['sessions', 'revoke', (await c.session()).sid] }) },
  'sessions revoke-all': { prepare: async (c) => ({ args: ['sessions', 'revoke-all', '--user', (await c.session()).userId] }) },
  'signing-keys list': READ_ONLY,
  'signing-keys rotate': { prepare: async () => ({ args: ['signing-keys', 'rotate'] }) },
  'audit list': READ_ONLY,
  'audit verify': READ_ONLY,
  'audit check-head': READ_ONLY,
  'config check': READ_ONLY
}

/** What this test reads of the program's commands (commander's own types stay in cli/). */
interface CommandTree { name: () => string, commands: readonly CommandTree[] }

/** `group sub` for every leaf command of the program. */
function leafCommands (command: CommandTree, prefix: string[] = []): string[] {
  if (command.commands.length === 0) return [prefix.join(' ')]
  return command.commands.flatMap((sub) => leafCommands(sub, [...prefix, sub.name()]))
}

t.test('every command that changes something writes an audit record naming the CLI and its OS user', async (t: Test) => {
  const path = join(tempDir(t, 'portier-cli-'), 'identity.db')
  openDatabase(path).close()
  const env = { IDENTITY_DATABASE_PATH: path, ...WITH_SIGNING_KEY_ENCRYPTION }
  const run: CommandContext['run'] = async (args, input) => await runPortierHere(args, env, input)
  // A server on the same file, for the sessions the session commands revoke.
  const server = await startIdentity(t, {}, { databasePath: path })
  const json = async (args: string[], input?: string) => JSON.parse((await run(args, input)).stdout)
  await run(['roles', 'set', 'member', '--permissions', 'tasks:*'])
  const c: CommandContext = {
    run,
    user: async () => (await json(['users', 'create', '--email', `${next('c')}@example.com`, '--roles', 'member', '--password-stdin'], `${PASSWORD}\n`)).user.id as string,
    key: async () => (await json(['keys', 'create', '--name', next('key'), '--permissions', 'tasks:read', '--expires-in', '30d'])).api_key.id as string,
    session: async () => {
      const email = `${next('c')}@example.com`
      const userId = (await json(['users', 'create', '--email', email, '--roles', 'member', '--password-stdin'], `${PASSWORD}\n`)).user.id as string
      const answer = await http(`${server.publicUrl}/sessions`, { body: { session: { email, password: PASSWORD } } })
      return { sid: sidOf(answer.body.access_token as string), userId }
    }
  }

  const silent = new PassThrough()
  const commands = leafCommands(createPortierProgram({ stdin: new PassThrough(), stdout: silent, stderr: silent, env: {} }))
  t.ok(commands.length >= 25, 'the program has its commands')
  for (const name of Object.keys(COMMANDS)) t.ok(commands.includes(name), `${name}: a command of the program (no stale recipe)`)
  for (const name of commands) {
    const recipe = COMMANDS[name]
    if (recipe === undefined) {
      t.fail(`portier ${name} has no recipe here: add one, and make its call record in the audit trail`)
      continue
    }
    if ('readOnly' in recipe) continue
    const { args, input } = await recipe.prepare(c)
    const before = lastSeq(path)
    const result = await run(args, input)
    t.equal(result.code, 0, `portier ${name}: succeeds`, { stderr: result.stderr })
    const written = recordsAfter(path, before)
    t.ok(written.length > 0, `portier ${name}: writes an audit record`)
    t.match(written[0], { outcome: 'success', actor_type: 'cli', actor_id: /\S/ }, `portier ${name}: ${written[0]?.action ?? 'nothing'} by the CLI`)
  }
})
