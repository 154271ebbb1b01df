import t from 'tap'
import Database from 'better-sqlite3'
import { readFileSync, existsSync } from 'node:fs'
import { join } from 'node:path'
import { openDatabase } from '../../identity/store/database.js'
import { LATEST_SCHEMA_VERSION } from '../../identity/store/migrations.js'
import { adminClient, http } from '../helpers/http.js'
import { startIdentity, tempDir } from '../helpers/identity.js'

const PASSWORD = 'plain password 12345'

t.test('happy: WAL, busy timeout, foreign keys, migrations recorded once', async (t) => {
  const path = join(tempDir(t), 'id.db')
  const db = openDatabase(path)
  t.equal(db.pragma('journal_mode', { simple: true }), 'wal')
  t.equal(db.pragma('foreign_keys', { simple: true }), 1)
  t.ok((db.pragma('busy_timeout', { simple: true }) as number) >= 1000)
  const versions = db.prepare('SELECT version FROM schema_migrations ORDER BY version').pluck().all()
  t.same(versions, Array.from({ length: LATEST_SCHEMA_VERSION }, (_, i) => i + 1))
  db.close()
  // Re-opening applies nothing twice.
  const again = openDatabase(path)
  t.equal(again.prepare('SELECT count(*) FROM schema_migrations').pluck().get(), LATEST_SCHEMA_VERSION)
  again.close()
})

t.test('security: only hashes are stored, never passwords, key secrets or refresh tokens', async (t) => {
  const ctx = await startIdentity(t)
  const admin = adminClient(ctx.adminUrl, ctx.adminToken)
  await admin('POST', '/admin/users', { email: 'store@example.com', password: PASSWORD, roles: [] })
  const key = await admin('POST', '/admin/keys', { name: 'stored', permissions: ['users:list'] })
  const rotated = await admin('POST', `/admin/keys/${key.body.api_key.id}/rotate`, {})
  const login = await http(`${ctx.publicUrl}/sessions`, { body: { session: { email: 'store@example.com', password: PASSWORD } } })
  const refreshed = await http(`${ctx.publicUrl}/tokens`, { bearer: login.body.access_token, body: { refresh_token: login.body.refresh_token } })
  t.equal(refreshed.status, 200)

  const files = [ctx.databasePath, `${ctx.databasePath}-wal`].filter(existsSync)
  const bytes = files.map((f) => readFileSync(f).toString('latin1')).join('')
  const secrets: Array<[name: string, secret: string]> = [
    ['the password', PASSWORD],
    ['the API key', key.body.key],
    ['the rotated API key', rotated.body.key],
    ['the login refresh token', login.body.refresh_token],
    ['the refreshed refresh token', refreshed.body.refresh_token]
  ]
  for (const [name, secret] of secrets) {
    t.notOk(bytes.includes(secret), `the database never holds ${name}`)
  }
  // The secret part alone (without prefix and checksum) is not stored either.
  t.notOk(bytes.includes((key.body.key as string).slice(17, 60)))
  const db = new Database(ctx.databasePath, { readonly: true })
  t.teardown(() => db.close())
  t.match(db.prepare('SELECT password_hash FROM users').pluck().get(), /^\$argon2id\$v=19\$m=19456,p=1,t=2\$/)
  // Key secrets carry 256 random bits: SHA-256, self-described so that legacy argon2id rows can be told apart.
  for (const hash of db.prepare('SELECT secret_hash FROM api_key_secrets').pluck().all()) t.match(hash, /^sha256\$[A-Za-z0-9_-]{43}$/)
  for (const hash of db.prepare('SELECT token_hash FROM refresh_tokens').pluck().all()) t.match(hash, /^[0-9a-f]{64}$/)
})

t.test('error: a multi-step change that fails half-way leaves nothing behind', async (t) => {
  const ctx = await startIdentity(t)
  const admin = adminClient(ctx.adminUrl, ctx.adminToken)
  await admin('POST', '/admin/users', { email: 'tx@example.com', password: PASSWORD, roles: [] })
  const db = ctx.identity.db
  const count = (table: string): number => db.prepare(`SELECT count(*) FROM ${table}`).pluck().get() as number

  // Login writes a session and its first refresh token; fail the second write.
  db.exec("CREATE TRIGGER fail_refresh BEFORE INSERT ON refresh_tokens BEGIN SELECT RAISE(ABORT, 'injected failure'); END")
  const failed = await http(`${ctx.publicUrl}/sessions`, { body: { session: { email: 'tx@example.com', password: PASSWORD } } })
  t.equal(failed.status, 500)
  t.match(failed.body, { code: 'internal_error', status: 500 })
  t.notMatch(failed.text, /injected|SQLITE|refresh_tokens/, 'the answer does not leak internals')
  t.equal(count('sessions'), 0, 'no half-created session')
  db.exec('DROP TRIGGER fail_refresh')

  // A refresh marks the old token used and inserts the new one; fail the insert.
  const login = await http(`${ctx.publicUrl}/sessions`, { body: { session: { email: 'tx@example.com', password: PASSWORD } } })
  db.exec("CREATE TRIGGER fail_refresh BEFORE INSERT ON refresh_tokens BEGIN SELECT RAISE(ABORT, 'injected failure'); END")
  const refresh = { bearer: login.body.access_token, body: { refresh_token: login.body.refresh_token } }
  t.equal((await http(`${ctx.publicUrl}/tokens`, refresh)).status, 500)
  db.exec('DROP TRIGGER fail_refresh')
  t.equal((await http(`${ctx.publicUrl}/tokens`, refresh)).status, 200, 'the old token was not marked used by the failed attempt')

  // Creating a key writes the key and its secret; fail the secret.
  db.exec("CREATE TRIGGER fail_secret BEFORE INSERT ON api_key_secrets BEGIN SELECT RAISE(ABORT, 'injected failure'); END")
  t.equal((await admin('POST', '/admin/keys', { name: 'half', permissions: [] })).status, 500)
  t.equal(count('api_keys'), 0, 'no key without its secret')
})

t.test('happy: configured argon2 parameters are used, and a login upgrades an older hash', async (t) => {
  const databasePath = join(tempDir(t), 'rehash.db')
  const hashOf = (path: string): string => {
    const db = new Database(path, { readonly: true })
    try { return db.prepare('SELECT password_hash FROM users').pluck().get() as string } finally { db.close() }
  }
  const before = await startIdentity(t, {}, { databasePath })
  await adminClient(before.adminUrl, before.adminToken)('POST', '/admin/users', { email: 'old@example.com', password: PASSWORD, roles: [] })
  await before.identity.close()
  t.match(hashOf(databasePath), /^\$argon2id\$v=19\$m=19456,p=1,t=2\$/, 'created with the defaults')

  const stronger = { IDENTITY_ARGON2_MEMORY_KIB: '47104', IDENTITY_ARGON2_TIME_COST: '1' }
  const after = await startIdentity(t, stronger, { databasePath })
  const login = await http(`${after.publicUrl}/sessions`, { body: { session: { email: 'old@example.com', password: PASSWORD } } })
  t.equal(login.status, 201, 'the old hash still verifies')
  await after.identity.close()
  t.match(hashOf(databasePath), /^\$argon2id\$v=19\$m=47104,p=1,t=1\$/, 'the login re-hashed with the configured parameters')
})
