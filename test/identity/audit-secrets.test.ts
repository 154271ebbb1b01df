import t from 'tap'
import Database from 'better-sqlite3'
import { parseApiKey } from '../../common/api-key-format.js'
import { credentialsFileBeside, readCredentialsFile } from '../../identity/store/credentials-file.js'
import { DEMO_STARTED, demoEnvironment } from '../helpers/demo.js'
import { adminClient, http } from '../helpers/http.js'
import { assertStatus } from '../helpers/assert.js'
import { startProcess } from '../helpers/process.js'
import { runPortierHere } from '../helpers/cli.js'

/**
 * `npm start` seeds demo accounts as the system, and then operators, users and the CLI
 * change things: afterwards, no secret of any of it (passwords, key texts or their
 * secret parts, the admin and service tokens, the signing keys' encryption key, access
 * and refresh tokens) appears anywhere in the audit tables or in the logs.
 */

const DAY_MS = 86_400_000

t.test('no secret in the audit trail or the logs after the demo seed and a round of changes', async (t) => {
  const setup = await demoEnvironment(t)
  const demo = startProcess(t, 'dist/demo/start.js', setup.env, DEMO_STARTED)
  t.ok(await demo.ready, 'npm start prints its banner', { stderr: demo.stderr().slice(-2000) })
  const banner = demo.stdout()
  const credentials = readCredentialsFile(credentialsFileBeside(setup.databasePath))
  const printedPasswords = [...banner.matchAll(/password (\S+)/g)].map((m) => m[1] as string)
  const printedKeys = [...banner.matchAll(/\b(ptk_[A-Za-z0-9_]+)/g)].map((m) => m[1] as string)
  t.ok(printedPasswords.length >= 2 && printedKeys.length >= 1, 'the banner printed the seeded secrets')
  const demoUser = /(user@example\.com)\s+password (\S+)/.exec(banner)
  t.ok(demoUser, 'the banner names the demo user and password')
  const secrets: string[] = [...printedPasswords, ...printedKeys]
  const add = (...found: unknown[]): void => { for (const secret of found) if (secret !== undefined && secret !== null) secrets.push(String(secret)) }
  add(credentials.adminToken, credentials.serviceToken, credentials.signingKeyEncryptionKey)

  const admin = adminClient(setup.identityAdmin, String(credentials.adminToken))
  const password = 'an operator-chosen password'
  const created = await admin('POST', '/admin/users', { email: 'grace@example.com', password, roles: [] })
  assertStatus(t, created, 201)
  const newPassword = 'a second password, changed'
  assertStatus(t, await admin('PUT', `/admin/users/${created.body.user.id as string}/password`, { password: newPassword }), 200)
  const key = await admin('POST', '/admin/keys', { name: 'audited', permissions: ['users:list'], expires_at: new Date(Date.now() + 30 * DAY_MS).toISOString() })
  assertStatus(t, key, 201)
  const rotated = await admin('POST', `/admin/keys/${key.body.api_key.id as string}/rotate`, { grace_seconds: 60 })
  assertStatus(t, rotated, 200)
  add(password, newPassword, key.body.key, rotated.body.key)

  const publicUrl = setup.env.IDENTITY_PORT !== undefined ? `http://127.0.0.1:${setup.env.IDENTITY_PORT}` : ''
  if (demoUser !== null) {
    const login = await http(`${publicUrl}/sessions`, { body: { session: { email: demoUser[1], password: demoUser[2] } } })
    assertStatus(t, login, 201, 'the demo user logs in')
    add(login.body.access_token, login.body.refresh_token)
    assertStatus(t, await http(`${publicUrl}/sessions`, { body: { session: { email: demoUser[1], password: 'a wrong password typed' } } }), 401)
    secrets.push('a wrong password typed')
    assertStatus(t, await http(`${publicUrl}/sessions/current`, { method: 'DELETE', bearer: String(login.body.access_token) }), 204)
  }
  const cliPassword = 'set from the command line'
  const cli = await runPortierHere(['users', 'set-password', created.body.user.id as string, '--password-stdin'], { IDENTITY_DATABASE_PATH: setup.databasePath }, `${cliPassword}\n`)
  t.equal(cli.code, 0, 'the CLI changes a password', { stderr: cli.stderr })
  secrets.push(cliPassword)
  // The secret part of each key alone, without its public prefix.
  for (const text of secrets.filter((s) => s.startsWith('ptk_'))) {
    const parsed = parseApiKey(text)
    if (parsed !== null) secrets.push(parsed.secret)
  }

  demo.child.kill('SIGINT')
  t.equal((await demo.exited).code, 0, 'npm start stops')

  const db = new Database(setup.databasePath, { readonly: true })
  t.teardown(() => { db.close() })
  const rows = db.prepare('SELECT * FROM audit_log ORDER BY seq').all() as Array<Record<string, unknown>>
  const anchors = db.prepare('SELECT * FROM audit_anchor').all()
  const stored = JSON.stringify([rows, anchors])
  const logs = demo.stdout().replace(banner, '') + demo.stderr() + cli.stderr
  t.ok(rows.length >= 10, 'the round wrote records')
  for (const secret of secrets) {
    t.ok(secret.length >= 8, 'a secret worth looking for')
    t.notOk(stored.includes(secret), 'a secret is not in the audit tables')
    t.notOk(logs.includes(secret), 'a secret is not in the logs')
  }

  // Who the seed's records name: identity made its first signing key, the seeding the rest.
  const seeded = rows.filter((row) => row.actor_type === 'system')
  t.match(seeded[0], { action: 'signing_key.create', actor_id: 'identity' })
  t.ok(seeded.some((row) => row.action === 'user.create' && row.actor_id === 'seed'), 'the seed created users')
  t.ok(seeded.some((row) => row.action === 'key.create' && row.actor_id === 'seed'), 'the seed created the demo key')
  t.ok(rows.some((row) => row.actor_type === 'admin_token' && row.action === 'key.rotate'), 'the admin token rotated a key')
  t.ok(rows.some((row) => row.actor_type === 'cli' && row.action === 'user.password_reset'), 'the CLI changed a password')
})
