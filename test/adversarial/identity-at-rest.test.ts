import t, { type Test } from 'tap'
import Database from 'better-sqlite3'
import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { DEMO_STARTED, demoEnvironment } from '../helpers/demo.js'
import { http } from '../helpers/http.js'
import { tempDir } from '../helpers/temp.js'
import { builtEntry, REPO_ROOT, startProcess } from '../helpers/process.js'
import { startServerProcess } from '../helpers/process-stack.js'
import { freePort } from '../helpers/redis.js'
import { nodeCommand } from '../helpers/node-command.js'
import { WITH_SIGNING_KEY_ENCRYPTION, WITHOUT_SIGNING_KEY_ENCRYPTION } from '../helpers/signing-key-encryption.js'

/**
 * What a reader of identity's files gets, over real processes: nothing. The folder
 * identity or `npm start` creates is 0700; identity.db, -wal and -shm are 0600 while it
 * runs; `npm start` encrypts the signing private keys at rest with a key it generates
 * into credentials.json (an older install gains one and its keys are encrypted at the
 * next start), and the CLI, run on the same database, finds that key by itself.
 */

const modeOf = (path: string): string => `0${(statSync(path).mode & 0o777).toString(8)}`

/** The `portier` CLI as an operator runs it: a process with only the database path (and PATH). */
async function cli (args: string[], env: Record<string, string>): Promise<{ code: number | null, stdout: string, stderr: string }> {
  const child = spawn(...nodeCommand([builtEntry('dist/cli/portier.js'), ...args]), { cwd: REPO_ROOT, env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (chunk: Buffer) => { stdout += chunk.toString() })
  child.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString() })
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve))
  return { code, stdout, stderr }
}

function storedPrivateKeys (databasePath: string): string[] {
  const db = new Database(databasePath, { readonly: true, fileMustExist: true })
  try {
    return db.prepare('SELECT private_pkcs8 FROM signing_keys ORDER BY created_at').pluck().all() as string[]
  } finally {
    db.close()
  }
}

/** The database and its WAL, as bytes: what a reader of the files gets. */
function fileBytes (databasePath: string): string {
  return [databasePath, `${databasePath}-wal`].filter(existsSync).map((f) => readFileSync(f).toString('latin1')).join('')
}

function assertOwnerOnly (t: Test, databasePath: string, label: string): void {
  for (const suffix of ['', '-wal', '-shm']) {
    t.equal(modeOf(`${databasePath}${suffix}`), '0600', `${label}: identity.db${suffix} is 0600`)
  }
}

t.test('npm start on a fresh folder: 0700 / 0600, signing keys encrypted with a generated key the CLI finds too', async (t) => {
  const demo = await demoEnvironment(t)
  const running = startProcess(t, 'dist/demo/start.js', demo.env, DEMO_STARTED)
  t.ok(await running.ready, 'npm start prints its banner', { stderr: running.stderr().slice(-2000) })

  t.equal(modeOf(demo.dir), '0700', 'the data folder is 0700')
  assertOwnerOnly(t, demo.databasePath, 'while npm start runs')
  const credentialsFile = join(demo.dir, 'credentials.json')
  t.equal(modeOf(credentialsFile), '0600', 'credentials.json is 0600')
  const credentials = JSON.parse(readFileSync(credentialsFile, 'utf8')) as Record<string, string>
  t.match(credentials, { adminToken: /^[0-9a-f]{64}$/, serviceToken: /^[0-9a-f]{64}$/, signingKeyEncryptionKey: /^[0-9a-f]{64}$/ },
    'the encryption key is generated with the tokens')

  const keys = storedPrivateKeys(demo.databasePath)
  t.ok(keys.length >= 1 && keys.every((k) => k.startsWith('enc:v1:')), `every stored signing key is encrypted (${keys.length})`)
  t.notMatch(fileBytes(demo.databasePath), /PRIVATE KEY/, 'no PEM private key in identity.db or its WAL')
  t.notMatch(running.stdout(), /signing private keys are stored unencrypted/, 'no "unencrypted" warning')

  // The CLI gets only the database path, as an operator in the same folder would.
  const cliEnv = { IDENTITY_DATABASE_PATH: demo.databasePath }
  const rotated = await cli(['signing-keys', 'rotate'], cliEnv)
  t.equal(rotated.code, 0, `the CLI rotates the signing key on the npm start database\n${rotated.stderr}`)
  const kid = JSON.parse(rotated.stdout).signing_key?.kid as string | undefined
  t.match(kid, /\S/, 'it names the new key')
  t.ok(storedPrivateKeys(demo.databasePath).every((k) => k.startsWith('enc:v1:')), 'the key the CLI made is encrypted with the same key')
  t.equal((await cli(['keys', 'list'], cliEnv)).code, 0, 'keys list works')
  assertOwnerOnly(t, demo.databasePath, 'after the CLI ran')

  // The running server signs with the key the CLI made: both opened it with the same secret.
  const password = /admin@example\.com {3}password (\S+)/.exec(running.stdout())?.[1] as string
  const login = await http(`${demo.gateway}/sessions`, { body: { session: { email: 'admin@example.com', password } } })
  t.equal(login.status, 201, 'login through the gateway')
  const header = JSON.parse(Buffer.from(String(login.body.access_token).split('.')[0] as string, 'base64url').toString()) as { kid: string }
  t.equal(header.kid, kid, 'the token is signed with the key the CLI rotated in')

  // Without the credentials file the CLI cannot open the keys: the file is what it read.
  const moved = join(demo.dir, '..', 'credentials.json.moved')
  writeFileSync(moved, readFileSync(credentialsFile))
  rmSync(credentialsFile)
  const withoutFile = await cli(['keys', 'list'], cliEnv)
  writeFileSync(credentialsFile, readFileSync(moved), { mode: 0o600 })
  t.equal(withoutFile.code, 78, 'without credentials.json: exit 78')
  t.match(withoutFile.stderr, /IDENTITY_SIGNING_KEY_ENCRYPTION_KEY/, 'naming the variable')
  t.notOk(withoutFile.stderr.includes(credentials.signingKeyEncryptionKey as string), 'never the key')

  running.child.kill('SIGINT')
  t.equal((await running.exited).code, 0, 'Ctrl-C exits 0')
})

t.test('an install from before: the next npm start adds the key, encrypts the keys, tightens the files, notes the folder', async (t) => {
  const demo = await demoEnvironment(t)
  mkdirSync(demo.dir, { mode: 0o755 })
  chmodSync(demo.dir, 0o755)
  const tokens = { adminToken: randomBytes(32).toString('hex'), serviceToken: randomBytes(32).toString('hex') }
  writeFileSync(join(demo.dir, 'credentials.json'), `${JSON.stringify(tokens, null, 2)}\n`, { mode: 0o600 })
  // The database as an earlier version left it: signing keys in clear, files as SQLite made them.
  const older = await startServerProcess(t, {
    name: 'identity (before)',
    entry: 'dist/identity/server.js',
    env: {
      IDENTITY_HOST: '127.0.0.1',
      IDENTITY_PORT: demo.env.IDENTITY_PORT as string,
      IDENTITY_ADMIN_PORT: demo.env.IDENTITY_ADMIN_PORT as string,
      IDENTITY_DATABASE_PATH: demo.databasePath,
      IDENTITY_ADMIN_TOKEN: tokens.adminToken,
      IDENTITY_SERVICE_TOKEN: tokens.serviceToken,
      // An earlier version stored signing keys in clear: today that takes saying so.
      ...WITHOUT_SIGNING_KEY_ENCRYPTION,
      LOG_LEVEL: 'info'
    },
    url: `http://127.0.0.1:${demo.env.IDENTITY_PORT as string}`,
    readyPath: '/healthz'
  })
  t.match(older.output(), /signing private keys are stored unencrypted/, 'identity without a key warns, as before')
  await older.stop()
  t.ok(storedPrivateKeys(demo.databasePath).every((k) => k.includes('PRIVATE KEY')), 'the older database holds its keys in clear')
  chmodSync(demo.databasePath, 0o644)

  const running = startProcess(t, 'dist/demo/start.js', demo.env, DEMO_STARTED)
  t.ok(await running.ready, 'npm start starts on the older install', { stderr: running.stderr().slice(-2000) })
  const credentials = JSON.parse(readFileSync(join(demo.dir, 'credentials.json'), 'utf8')) as Record<string, string>
  t.same({ adminToken: credentials.adminToken, serviceToken: credentials.serviceToken }, tokens, 'the tokens are kept')
  t.match(credentials.signingKeyEncryptionKey, /^[0-9a-f]{64}$/, 'an encryption key is added')
  t.equal(modeOf(join(demo.dir, 'credentials.json')), '0600', 'credentials.json stays 0600')
  t.ok(storedPrivateKeys(demo.databasePath).every((k) => k.startsWith('enc:v1:')), 'the clear keys are encrypted at this start')
  t.match(running.stdout(), /encrypted the signing private keys stored unencrypted/, 'and the log says so')
  t.match(running.stdout(), /database file identity\.db was 0644: set to 0600/, 'the loose database file is tightened, logged')
  assertOwnerOnly(t, demo.databasePath, 'after the upgrade')
  t.equal(modeOf(demo.dir), '0755', 'the existing folder is left as it is')
  t.match(running.stdout(), /the database folder \S+ is 0755: other users can see which files it holds/, 'with a note')
  running.child.kill('SIGINT')
  t.equal((await running.exited).code, 0)
})

t.test('identity as its own process: the folder it creates is 0700, its files 0600 while it runs', async (t) => {
  const folder = join(tempDir(t, 'portier-at-rest-'), 'identity-data')
  const databasePath = join(folder, 'identity.db')
  const [port, adminPort] = [await freePort(), await freePort()]
  const identity = await startServerProcess(t, {
    name: 'identity',
    entry: 'dist/identity/server.js',
    env: {
      IDENTITY_HOST: '127.0.0.1',
      IDENTITY_PORT: String(port),
      IDENTITY_ADMIN_PORT: String(adminPort),
      IDENTITY_DATABASE_PATH: databasePath,
      IDENTITY_ADMIN_TOKEN: randomBytes(24).toString('hex'),
      IDENTITY_SERVICE_TOKEN: randomBytes(24).toString('hex'),
      ...WITH_SIGNING_KEY_ENCRYPTION,
      LOG_LEVEL: 'info'
    },
    url: `http://127.0.0.1:${port}`,
    readyPath: '/healthz'
  })
  t.equal(modeOf(folder), '0700')
  assertOwnerOnly(t, databasePath, 'identity server')
  await identity.stop()
})
