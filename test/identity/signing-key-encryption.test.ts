import t, { type Test } from 'tap'
import Database from 'better-sqlite3'
import { spawnSync } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { randomBytes } from 'node:crypto'
import { createLocalJWKSet, decodeProtectedHeader, exportPKCS8, generateKeyPair, jwtVerify } from 'jose'
import { ConfigError } from '../../common/config.js'
import { buildIdentity } from '../../identity/app.js'
import { loadIdentityCliConfig, loadIdentityConfig, SIGNING_KEY_ENCRYPTION_KEY_REQUIRED } from '../../identity/config.js'
import { createSigningKeyCipher, SigningKeyDecryptionError } from '../../identity/services/signing-key-cipher.js'
import { openDatabase } from '../../identity/store/database.js'
import { runPortierHere } from '../helpers/cli.js'
import { adminClient, http } from '../helpers/http.js'
import { startIdentity, tempDir, type TestIdentity } from '../helpers/identity.js'
import { captureLogs } from '../helpers/logs.js'
import { assertStatus } from '../helpers/assert.js'
import { REPO_ROOT } from '../helpers/repo-root.js'
import { nodeCommand } from '../helpers/node-command.js'
import { WITHOUT_SIGNING_KEY_ENCRYPTION } from '../helpers/signing-key-encryption.js'
import { configProblems } from '../helpers/config-problems.js'

/**
 * Encryption at rest of signing private keys (IDENTITY_SIGNING_KEY_ENCRYPTION_KEY):
 * AES-256-GCM under an HKDF-derived key, the kid bound as AAD, an `enc:v1:` envelope
 * in the private key column. The key is required unless IDENTITY_SIGNING_KEY_ENCRYPTION
 * is off. An existing database is upgraded at start; a database whose keys the
 * configured secret cannot open is refused at start (exit 78), naming the variable and
 * never its value.
 */
const OFF = 'IDENTITY_SIGNING_KEY_ENCRYPTION'

const ROOT = REPO_ROOT
const VARIABLE = 'IDENTITY_SIGNING_KEY_ENCRYPTION_KEY'
const PREVIOUS = 'IDENTITY_SIGNING_KEY_ENCRYPTION_KEY_PREVIOUS'
const ENVELOPE = /^enc:v1:[A-Za-z0-9_-]{16}:[A-Za-z0-9_-]+$/
const USER = { email: 'ada@example.com', password: 'correct horse battery staple' }

const newSecret = (): string => randomBytes(32).toString('hex')

interface StoredKey { kid: string, value: string, retired: boolean }

/** The signing_keys rows as stored, oldest first, read through a connection of the test's own. */
function storedKeys (databasePath: string): StoredKey[] {
  const db = new Database(databasePath, { readonly: true })
  try {
    return (db.prepare('SELECT kid, private_pkcs8 AS value, retired_at FROM signing_keys ORDER BY created_at, rowid').all() as
      Array<{ kid: string, value: string, retired_at: number | null }>).map((r) => ({ kid: r.kid, value: r.value, retired: r.retired_at !== null }))
  } finally {
    db.close()
  }
}

/** Writes into a row behind identity's back, as an attacker with the file (or a bad restore) would. */
function setStoredValue (databasePath: string, kid: string, value: string): void {
  const db = new Database(databasePath)
  try {
    db.prepare('UPDATE signing_keys SET private_pkcs8 = ? WHERE kid = ?').run(value, kid)
  } finally {
    db.close()
  }
}

/** The database file and its WAL, as bytes an attacker with the volume would read. */
function fileText (databasePath: string): string {
  return [databasePath, `${databasePath}-wal`].filter(existsSync).map((f) => readFileSync(f).toString('latin1')).join('')
}

function assertEncrypted (t: Test, keys: StoredKey[], label: string): void {
  t.ok(keys.length > 0, `${label}: some keys`)
  for (const key of keys) {
    t.match(key.value, ENVELOPE, `${label}: ${key.kid} is an envelope`)
    t.notMatch(key.value, /PRIVATE KEY/, `${label}: ${key.kid} holds no PEM`)
  }
}

const isUnencryptedWarning = (line: Record<string, unknown>): boolean =>
  line.level === 40 && String(line.msg).startsWith(`signing private keys are stored unencrypted: set ${VARIABLE}`)

/** identity on `databasePath`, its signing keys encrypted with `secret`; without one, stored in clear (encryption off). */
async function start (t: Test, databasePath: string, secret?: string, env: Record<string, string> = {}): Promise<TestIdentity> {
  return await startIdentity(t, { ...(secret !== undefined ? { [VARIABLE]: secret } : WITHOUT_SIGNING_KEY_ENCRYPTION), ...env }, { databasePath })
}

/** Creates the user `login` logs in as (once per database). */
async function createUser (t: Test, s: TestIdentity): Promise<void> {
  assertStatus(t, await adminClient(s.adminUrl, s.adminToken)('POST', '/admin/users', { ...USER, roles: [] }), 201, 'user created')
}

/** A login that must succeed: its access token. */
async function login (t: Test, s: TestIdentity): Promise<string> {
  const answer = await http(`${s.publicUrl}/sessions`, { body: { session: USER } })
  assertStatus(t, answer, 201, 'login')
  return answer.body.access_token as string
}

/** Verifies a token against the JWKS `s` publishes, as a gateway does: its kid, or a rejection. */
async function verifiedKid (s: TestIdentity, token: string): Promise<string> {
  const jwks = await http(`${s.publicUrl}/.well-known/jwks.json`)
  const { protectedHeader } = await jwtVerify(token, createLocalJWKSet(jwks.body), { issuer: s.config.issuer, audience: s.config.audience })
  return protectedHeader.kid as string
}

/** identity built (not listening) on `databasePath` with `env`: resolves, or rejects with its error. */
async function build (t: Test, databasePath: string, env: Record<string, string>): Promise<unknown> {
  const logs = captureLogs()
  try {
    const config = loadIdentityConfig({
      IDENTITY_DATABASE_PATH: databasePath, IDENTITY_ADMIN_TOKEN: newSecret(), IDENTITY_SERVICE_TOKEN: newSecret(), LOG_LEVEL: 'info', ...env
    })
    const identity = await buildIdentity(config, { logStream: logs.stream })
    t.teardown(() => identity.close())
    return null
  } catch (err) {
    return err
  }
}

/** `node dist/identity/server.js` on `databasePath`: how an operator meets a refusal. */
function runServer (databasePath: string, env: Record<string, string>): { status: number | null, stderr: string, stdout: string } {
  const result = spawnSync(...nodeCommand(['dist/identity/server.js']), {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? '',
      IDENTITY_DATABASE_PATH: databasePath,
      IDENTITY_ADMIN_TOKEN: newSecret(),
      IDENTITY_SERVICE_TOKEN: newSecret(),
      IDENTITY_HOST: '127.0.0.1',
      IDENTITY_PORT: '0',
      IDENTITY_ADMIN_PORT: '0',
      ...env
    },
    encoding: 'utf8',
    // A refusal exits at once; this only stops a server that wrongly started.
    timeout: 20_000
  })
  return { status: result.status, stderr: result.stderr, stdout: result.stdout }
}

t.before(() => {
  if (!existsSync(join(ROOT, 'dist', 'identity', 'server.js'))) throw new Error('dist/ is missing: run `npm run build` (npm test does)')
})

t.test('happy: with the key set, every private key is stored encrypted: first, API rotation, CLI rotation', async (t) => {
  const secret = newSecret()
  const databasePath = join(tempDir(t), 'identity.db')
  const s = await start(t, databasePath, secret)
  await createUser(t, s)

  const [first] = storedKeys(databasePath)
  assertEncrypted(t, storedKeys(databasePath), 'first key')
  const firstToken = await login(t, s)
  t.equal(decodeProtectedHeader(firstToken).kid, first?.kid, 'the first key signs')
  t.equal(await verifiedKid(s, firstToken), first?.kid, 'and its token verifies against the JWKS')

  const admin = adminClient(s.adminUrl, s.adminToken)
  const rotated = await admin('POST', '/admin/signing-keys/rotate')
  assertStatus(t, rotated, 200, 'API rotation')
  t.same(Object.keys(rotated.body.signing_key).sort(), ['alg', 'created_at', 'kid', 'publish_until', 'retired_at', 'status'], 'the admin view is unchanged')
  const apiKid = rotated.body.signing_key.kid as string
  assertEncrypted(t, storedKeys(databasePath), 'after an API rotation')
  const apiToken = await login(t, s)
  t.equal(await verifiedKid(s, apiToken), apiKid, 'the API-rotated key signs, verifiable')

  const cli = await runPortierHere(['signing-keys', 'rotate'], { IDENTITY_DATABASE_PATH: databasePath, [VARIABLE]: secret })
  t.equal(cli.code, 0, 'CLI rotation', { stderr: cli.stderr })
  const cliKid = JSON.parse(cli.stdout).signing_key.kid as string
  t.not(cliKid, apiKid)
  const keys = storedKeys(databasePath)
  t.same(keys.map((k) => k.kid), [first?.kid, apiKid, cliKid])
  assertEncrypted(t, keys, 'after a CLI rotation')
  const cliToken = await login(t, s)
  t.equal(decodeProtectedHeader(cliToken).kid, cliKid, 'the running server signs with the CLI key at once')
  t.equal(await verifiedKid(s, cliToken), cliKid, 'verifiable')
  t.equal(await verifiedKid(s, firstToken), first?.kid, 'tokens of the retired keys still verify')

  const listed = await admin('GET', '/admin/signing-keys')
  t.notMatch(listed.text, /enc:v1|PRIVATE/, 'no stored private key material in the admin view')
  t.notMatch(fileText(databasePath), /PRIVATE KEY/, 'no PEM anywhere in the database file or its WAL')
  t.notOk(s.logText().includes(secret), 'the secret is never logged')
  t.notMatch(s.logText(), /enc:v1|PRIVATE KEY/, 'nor any key material')
  t.notOk(s.logs.some((line) => isUnencryptedWarning(line)), 'no "unencrypted" warning')
})

t.test('happy: the decrypted key is cached per kid; a new kid is read at once', async (t) => {
  const secret = newSecret()
  const databasePath = join(tempDir(t), 'identity.db')
  const s = await start(t, databasePath, secret)
  await createUser(t, s)
  const [active] = storedKeys(databasePath)
  t.equal(await verifiedKid(s, await login(t, s)), active?.kid)

  // Were the row decrypted on every signature, this would make signing fail.
  setStoredValue(databasePath, active?.kid as string, createSigningKeyCipher(secret).encrypt('another-kid', 'not a key'))
  t.equal(await verifiedKid(s, await login(t, s)), active?.kid, 'signing uses the key decrypted once')

  const cli = await runPortierHere(['signing-keys', 'rotate'], { IDENTITY_DATABASE_PATH: databasePath, [VARIABLE]: secret })
  // The CLI checks every stored key first: the one corrupted above stops it.
  t.equal(cli.code, 78, 'the CLI refuses a database with a key it cannot open', { stderr: cli.stderr })
  t.match(cli.stderr, new RegExp(`${VARIABLE}: does not decrypt the stored signing keys \\(kid ${active?.kid as string}\\)`))
  setStoredValue(databasePath, active?.kid as string, createSigningKeyCipher(secret).encrypt(active?.kid as string,
    await exportPKCS8((await generateKeyPair('EdDSA', { crv: 'Ed25519', extractable: true })).privateKey)))
  const again = await runPortierHere(['signing-keys', 'rotate'], { IDENTITY_DATABASE_PATH: databasePath, [VARIABLE]: secret })
  t.equal(again.code, 0, 'rotation once every key opens', { stderr: again.stderr })
  const kid = JSON.parse(again.stdout).signing_key.kid as string
  t.equal(await verifiedKid(s, await login(t, s)), kid, 'the new kid is decrypted and signs at once')
})

t.test('upgrade: a database written with encryption off is encrypted at the first start with the key', async (t) => {
  const databasePath = join(tempDir(t), 'identity.db')
  const plain = await start(t, databasePath)
  await createUser(t, plain)
  const oldToken = await login(t, plain)
  t.equal(plain.logs.filter(isUnencryptedWarning).length, 1, 'one warning at start without the key')
  const rotated = await adminClient(plain.adminUrl, plain.adminToken)('POST', '/admin/signing-keys/rotate')
  assertStatus(t, rotated, 200, 'rotation without the key')
  const before = storedKeys(databasePath)
  t.equal(before.length, 2)
  for (const key of before) t.match(key.value, /^-----BEGIN PRIVATE KEY-----/, `${key.kid} is stored unencrypted`)
  await plain.identity.close()

  const secret = newSecret()
  const upgraded = await start(t, databasePath, secret)
  const after = storedKeys(databasePath)
  t.same(after.map((k) => k.kid), before.map((k) => k.kid), 'the same keys')
  assertEncrypted(t, after, 'upgraded')
  const notes = upgraded.logs.filter((line) => String(line.msg).startsWith('encrypted the signing private keys'))
  t.equal(notes.length, 1, 'logged once')
  t.match(notes[0], { level: 30, count: 2 }, 'with the count only')
  t.notOk(upgraded.logText().includes(secret), 'the secret is not logged')
  t.notMatch(upgraded.logText(), /PRIVATE KEY|enc:v1/, 'nor key material')
  t.notOk(upgraded.logs.some((line) => isUnencryptedWarning(line)), 'no warning any more')
  t.notMatch(fileText(databasePath), /PRIVATE KEY/, 'the replaced PEMs are gone from the file and its WAL')

  t.equal(await verifiedKid(upgraded, oldToken), before[0]?.kid, 'a token signed before the upgrade still verifies')
  t.equal(await verifiedKid(upgraded, await login(t, upgraded)), before[1]?.kid, 'the active key still signs')
  await upgraded.identity.close()

  const third = await start(t, databasePath, secret)
  t.notOk(third.logs.some((line) => String(line.msg).startsWith('encrypted the signing')), 'nothing to upgrade at the next start')
  t.same(storedKeys(databasePath), after, 'and nothing rewritten')
})

t.test('upgrade: the CLI given the key upgrades a database too, and says so', async (t) => {
  const databasePath = join(tempDir(t), 'identity.db')
  // Created as identity's server does (the CLI never creates a database); its first signing key is the CLI's.
  openDatabase(databasePath).close()
  const plain = await runPortierHere(['signing-keys', 'list'], { IDENTITY_DATABASE_PATH: databasePath, [OFF]: 'off' })
  t.equal(plain.code, 0, 'a signing key made by the CLI with encryption off', { stderr: plain.stderr })
  t.notMatch(plain.stderr, /unencrypted/, 'the CLI leaves the "unencrypted" warning to the server')
  t.match(storedKeys(databasePath)[0]?.value, /^-----BEGIN PRIVATE KEY-----/)

  const secret = newSecret()
  const upgraded = await runPortierHere(['signing-keys', 'list'], { IDENTITY_DATABASE_PATH: databasePath, [VARIABLE]: secret })
  t.equal(upgraded.code, 0, { stderr: upgraded.stderr })
  t.match(upgraded.stderr, /^warning: encrypted the signing private keys stored unencrypted \(1\)$/m)
  t.notOk(upgraded.stderr.includes(secret) || upgraded.stdout.includes(secret), 'the secret is not shown')
  assertEncrypted(t, storedKeys(databasePath), 'upgraded by the CLI')
  const s = await start(t, databasePath, secret)
  await createUser(t, s)
  t.equal(await verifiedKid(s, await login(t, s)), storedKeys(databasePath)[0]?.kid, 'the server signs with it')
})

t.test('error: restart without the key is refused, naming the variable', async (t) => {
  const secret = newSecret()
  const databasePath = join(tempDir(t), 'identity.db')
  const s = await start(t, databasePath, secret)
  await s.identity.close()
  const stored = storedKeys(databasePath)

  const err = await build(t, databasePath, {})
  t.ok(err instanceof ConfigError, 'a ConfigError')
  t.same((err as ConfigError).problems, [SIGNING_KEY_ENCRYPTION_KEY_REQUIRED], 'refused by the configuration: the key is required')
  const off = await build(t, databasePath, { [OFF]: 'off' })
  t.ok(off instanceof ConfigError, 'encryption off: a ConfigError from the builder')
  t.same((off as ConfigError).problems, [`${VARIABLE}: is required: the stored signing private keys are encrypted; set the key they were encrypted with`],
    'off does not open keys that are encrypted')

  const server = runServer(databasePath, {})
  t.equal(server.status, 78, 'the server exits 78 (EX_CONFIG)', { stderr: server.stderr })
  t.match(server.stderr, /^Invalid configuration \(identity environment\):\n {2}- IDENTITY_SIGNING_KEY_ENCRYPTION_KEY: is required/)
  t.notMatch(server.stderr, /\n\s+at /, 'no stack trace')
  t.notMatch(server.stdout, /listening/i, 'it never started')

  for (const env of [{}, { [OFF]: 'off' }]) {
    const cli = await runPortierHere(['signing-keys', 'list'], { IDENTITY_DATABASE_PATH: databasePath, ...env })
    t.equal(cli.code, 78, `the CLI refuses the same way (${JSON.stringify(env)})`)
    t.match(cli.stderr, new RegExp(`${VARIABLE}: is required`))
  }
  t.same(storedKeys(databasePath), stored, 'nothing was written')
})

t.test('error: restart with a wrong key is refused; the message holds neither key', async (t) => {
  const secret = newSecret()
  const wrong = newSecret()
  const databasePath = join(tempDir(t), 'identity.db')
  const s = await start(t, databasePath, secret)
  const [key] = storedKeys(databasePath)
  await s.identity.close()

  const err = await build(t, databasePath, { [VARIABLE]: wrong })
  t.ok(err instanceof ConfigError, 'a ConfigError from the builder')
  t.match((err as ConfigError).message, `${VARIABLE}: does not decrypt the stored signing keys (kid ${key?.kid as string})`)

  const server = runServer(databasePath, { [VARIABLE]: wrong })
  t.equal(server.status, 78, 'the server exits 78 (EX_CONFIG)', { stderr: server.stderr })
  t.match(server.stderr, `${VARIABLE}: does not decrypt the stored signing keys`)
  t.notMatch(server.stderr, /\n\s+at /, 'no stack trace')
  for (const [name, value] of [['the wrong key', wrong], ['the right key', secret]]) {
    t.notOk(server.stderr.includes(value as string), `stderr does not hold ${name as string}`)
    t.notOk((err as Error).message.includes(value as string), `the error does not hold ${name as string}`)
  }

  const cli = await runPortierHere(['signing-keys', 'rotate'], { IDENTITY_DATABASE_PATH: databasePath, [VARIABLE]: wrong })
  t.equal(cli.code, 78, 'the CLI refuses before writing a key the server could not open')
  t.match(cli.stderr, 'does not decrypt the stored signing keys')
  t.notOk(cli.stderr.includes(wrong), 'without the key')
  t.equal(storedKeys(databasePath).length, 1, 'no key was added')

  const right = await start(t, databasePath, secret)
  await createUser(t, right)
  t.equal(await verifiedKid(right, await login(t, right)), key?.kid, 'the right key still works')
})

t.test('security: a ciphertext moved to another kid\'s row does not decrypt (kid bound as AAD)', async (t) => {
  const secret = newSecret()
  const databasePath = join(tempDir(t), 'identity.db')
  const s = await start(t, databasePath, secret)
  assertStatus(t, await adminClient(s.adminUrl, s.adminToken)('POST', '/admin/signing-keys/rotate'), 200, 'rotation')
  await s.identity.close()
  const [retired, active] = storedKeys(databasePath)
  t.equal(retired?.retired, true)

  // The retired key's ciphertext under the active kid: both rows are sealed with the right secret.
  setStoredValue(databasePath, active?.kid as string, retired?.value as string)
  const err = await build(t, databasePath, { [VARIABLE]: secret })
  t.ok(err instanceof ConfigError, 'refused at start')
  t.match((err as ConfigError).problems.join(), `does not decrypt the stored signing keys (kid ${active?.kid as string})`)
})

t.test('security: the cipher itself', async (t) => {
  const secret = newSecret()
  const cipher = createSigningKeyCipher(secret)
  const pem = await exportPKCS8((await generateKeyPair('ES256', { extractable: true })).privateKey)
  const envelope = cipher.encrypt('kid-a', pem)
  t.match(envelope, ENVELOPE)
  t.equal(cipher.decrypt('kid-a', envelope), pem, 'round trip')
  t.equal(createSigningKeyCipher(secret).decrypt('kid-a', envelope), pem, 'the same secret derives the same key (another process)')
  t.not(cipher.encrypt('kid-a', pem), envelope, 'a new nonce each time')
  t.throws(() => cipher.decrypt('kid-b', envelope), SigningKeyDecryptionError, 'another kid')
  t.throws(() => createSigningKeyCipher(newSecret()).decrypt('kid-a', envelope), SigningKeyDecryptionError, 'another secret')
  const [prefix, version, nonce, sealed] = envelope.split(':') as [string, string, string, string]
  const flipped = Buffer.from(sealed, 'base64url')
  flipped[0] = (flipped[0] as number) ^ 1
  t.throws(() => cipher.decrypt('kid-a', [prefix, version, nonce, flipped.toString('base64url')].join(':')), SigningKeyDecryptionError, 'a flipped bit')
  for (const malformed of ['enc:v1:', 'enc:v1:abc', `enc:v1:${nonce}`, `enc:v1:${nonce}:${sealed}:x`, 'enc:v1:!!!!:????', pem]) {
    t.throws(() => cipher.decrypt('kid-a', malformed), SigningKeyDecryptionError, `malformed: ${malformed.slice(0, 12)}`)
  }
  try {
    cipher.decrypt('kid-b', envelope)
  } catch (err) {
    t.notOk((err as Error).message.includes(secret), 'the error names no secret')
    t.equal((err as Error).message, 'the private key of signing key kid-b does not decrypt')
  }
})

t.test('key change: the previous key is re-encrypted with the new one at start', async (t) => {
  const oldSecret = newSecret()
  const newKey = newSecret()
  const databasePath = join(tempDir(t), 'identity.db')
  const s = await start(t, databasePath, oldSecret)
  await createUser(t, s)
  const oldToken = await login(t, s)
  assertStatus(t, await adminClient(s.adminUrl, s.adminToken)('POST', '/admin/signing-keys/rotate'), 200, 'rotation')
  await s.identity.close()
  const before = storedKeys(databasePath)

  const changed = await start(t, databasePath, newKey, { [PREVIOUS]: oldSecret })
  const after = storedKeys(databasePath)
  assertEncrypted(t, after, 're-encrypted')
  const cipher = createSigningKeyCipher(newKey)
  for (const [i, key] of after.entries()) {
    t.not(key.value, before[i]?.value, `${key.kid} rewritten`)
    t.match(cipher.decrypt(key.kid, key.value), /^-----BEGIN PRIVATE KEY-----/, `${key.kid} opens with the new key`)
  }
  t.match(changed.logs.find((line) => String(line.msg).startsWith('re-encrypted')), { level: 30, count: 2 })
  for (const value of [oldSecret, newKey]) t.notOk(changed.logText().includes(value), 'no secret logged')
  t.equal(await verifiedKid(changed, oldToken), before[0]?.kid, 'old tokens still verify')
  t.equal(await verifiedKid(changed, await login(t, changed)), before[1]?.kid, 'the active key still signs')
  await changed.identity.close()

  t.equal(await build(t, databasePath, { [VARIABLE]: newKey }), null, 'the new key alone opens them now')
  const err = await build(t, databasePath, { [VARIABLE]: oldSecret })
  t.match((err as ConfigError).problems?.join(), 'does not decrypt the stored signing keys', 'the old one no longer does')
  const neither = await build(t, databasePath, { [VARIABLE]: newSecret(), [PREVIOUS]: newSecret() })
  t.match((neither as ConfigError).problems?.join(), `${VARIABLE} (nor ${PREVIOUS}): does not decrypt the stored signing keys`)
})

t.test('config: the variables, for the server and the CLI', async (t) => {
  const tokens = { IDENTITY_ADMIN_TOKEN: 'a'.repeat(32), IDENTITY_SERVICE_TOKEN: 's'.repeat(32) }
  const secret = newSecret()
  t.match(loadIdentityConfig({ ...tokens, [OFF]: 'off' }), { signingKeyEncryptionKey: undefined, previousSigningKeyEncryptionKey: undefined, signingKeyEncryptionRequired: false },
    'unset, with encryption off')
  t.match(loadIdentityConfig({ ...tokens, [VARIABLE]: secret }), { signingKeyEncryptionKey: secret, signingKeyEncryptionRequired: true })
  t.equal(loadIdentityCliConfig({ [VARIABLE]: secret }).signingKeyEncryptionKey, secret, 'the CLI reads it too')
  t.equal(loadIdentityConfig({ ...tokens, [VARIABLE]: '', [OFF]: 'off' }).signingKeyEncryptionKey, undefined, 'empty means unset')
  t.equal(loadIdentityConfig({ ...tokens, [VARIABLE]: secret, [OFF]: 'off' }).signingKeyEncryptionKey, secret, 'off with a key: the key is still used')
  const problems = (env: Record<string, string>): string[] => {
    try {
      loadIdentityConfig({ ...tokens, ...env })
    } catch (err) {
      if (err instanceof ConfigError) return err.problems
      throw err
    }
    return []
  }
  const short = 'x'.repeat(31)
  t.same(problems({ [VARIABLE]: short }), [`${VARIABLE}: must NOT have fewer than 32 characters`], 'at least 32 characters')
  t.same(problems({ [PREVIOUS]: secret, [OFF]: 'off' }), [`${PREVIOUS}: requires ${VARIABLE} (the new key)`], 'a previous key alone is refused')
  t.same(problems({}), [SIGNING_KEY_ENCRYPTION_KEY_REQUIRED], 'no key: refused by default')
  t.same(problems({ [VARIABLE]: '' }), [SIGNING_KEY_ENCRYPTION_KEY_REQUIRED], 'an empty key is no key')
  t.same(problems({ [OFF]: 'no' }), [`${OFF}: must be one of on, off`], 'only on or off')
  t.notOk(problems({ [VARIABLE]: short }).join().includes(short), 'the value is not echoed')
})

t.test('default: without the key identity and its CLI refuse to start, saying how to fix it; off starts, with the warning', async (t) => {
  const dir = tempDir(t)
  const fresh = join(dir, 'fresh', 'identity.db')
  const server = runServer(fresh, {})
  t.equal(server.status, 78, 'the server exits 78 (EX_CONFIG)', { stderr: server.stderr })
  t.match(server.stderr, /^Invalid configuration \(identity environment\):\n {2}- IDENTITY_SIGNING_KEY_ENCRYPTION_KEY: is required: signing private keys are never stored in clear/)
  t.match(server.stderr, 'openssl rand -hex 32', 'says how to make one')
  t.match(server.stderr, 'IDENTITY_SIGNING_KEY_ENCRYPTION=off', 'and how to do without')
  t.notMatch(server.stderr, /\n\s+at /, 'no stack trace')
  t.notOk(existsSync(fresh), 'no database was created')

  t.same(configProblems(() => loadIdentityCliConfig({})), [SIGNING_KEY_ENCRYPTION_KEY_REQUIRED], 'the CLI configuration requires it too')
  const databasePath = join(dir, 'identity.db')
  openDatabase(databasePath).close()
  const cli = await runPortierHere(['signing-keys', 'list'], { IDENTITY_DATABASE_PATH: databasePath })
  t.equal(cli.code, 78, 'the CLI exits 78', { stderr: cli.stderr })
  t.match(cli.stderr, `${VARIABLE}: is required: signing private keys are never stored in clear`)
  t.same(storedKeys(databasePath), [], 'and made no signing key')

  const off = await start(t, databasePath)
  t.equal(off.logs.filter(isUnencryptedWarning).length, 1, 'off: identity starts, and warns once')
  t.match(storedKeys(databasePath)[0]?.value, /^-----BEGIN PRIVATE KEY-----/, 'its signing key is stored in clear')
})
