import t, { type Test } from 'tap'
import { spawn } from 'node:child_process'
import { createHash, randomBytes } from 'node:crypto'
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { tempDir } from '../helpers/temp.js'
import { builtEntry, REPO_ROOT, startProcess } from '../helpers/process.js'
import { freePort } from '../helpers/redis.js'
import { nodeCommand } from '../helpers/node-command.js'
import { WITH_SIGNING_KEY_ENCRYPTION } from '../helpers/signing-key-encryption.js'

/**
 * The `portier` CLI never works on a database identity does not use: run from another
 * folder (the default path is relative), or pointed at a wrong path, it used to create
 * a new, empty database and answer `{"api_keys": []}` with exit 0. Now a path that
 * holds no Portier database is a configuration error (exit 78) naming the absolute
 * path, and nothing is created or changed. The identity server (and `npm start`)
 * still initialise a missing or empty file, but refuse another program's database
 * and a file that is not SQLite, leaving them as they were.
 */

const EXIT_CONFIG = 78
const BIN = join(REPO_ROOT, 'bin', 'portier.js')
const RUN_TIMEOUT_MS = 30_000

interface Run { code: number | null, stdout: string, stderr: string }

async function portier (cwd: string, env: Record<string, string>, args: string[]): Promise<Run> {
  const child = spawn(...nodeCommand([BIN, ...args]), { cwd, env: { PATH: process.env.PATH ?? '', ...WITH_SIGNING_KEY_ENCRYPTION, ...env }, stdio: ['pipe', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (chunk: Buffer) => { stdout += chunk.toString() })
  child.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString() })
  child.stdin.end('a long enough password\n')
  const timer = setTimeout(() => child.kill('SIGKILL'), RUN_TIMEOUT_MS)
  const code = await new Promise<number | null>((resolve) => child.once('close', resolve))
  clearTimeout(timer)
  return { code, stdout, stderr }
}

/** Commands that read and commands that write (all open the database the same way): none may create or touch the file. */
const COMMANDS: string[][] = [
  ['keys', 'list'],
  ['users', 'list'],
  ['keys', 'create', '--name', 'ops', '--permissions', 'users:list', '--expires-in', '1d'],
  ['users', 'create', '--email', 'ops@example.com', '--password-stdin']
]

let turn = 0
const nextCommand = (): string[] => COMMANDS[turn++ % COMMANDS.length] as string[]

const escape = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
const digest = (path: string): string => createHash('sha256').update(readFileSync(path)).digest('hex')

/**
 * Each of `commands` refuses with exit 78, names the path as `named`, prints nothing on
 * stdout. Every command opens the database through the same function, so each kind of
 * wrong path is tried with one command (in turn, so that reads and writes both meet
 * every kind), and every command with the first kind.
 */
async function refused (t: Test, cwd: string, env: Record<string, string>, named: RegExp, commands: string[][] = [nextCommand()]): Promise<void> {
  // One process per command, side by side: a CLI run is mostly Node's start-up.
  const runs = await Promise.all(commands.map(async (args) => await portier(cwd, env, args)))
  for (const [index, args] of commands.entries()) {
    const run = runs[index] as Run
    const label = args.slice(0, 2).join(' ')
    t.equal(run.code, EXIT_CONFIG, `${label}: exit 78 (bad configuration)`, { stderr: run.stderr })
    t.match(run.stderr, /^Invalid configuration \(identity database\):\n {2}- IDENTITY_DATABASE_PATH: /, `${label}: a configuration problem`)
    t.match(run.stderr, named, `${label}: names the absolute path`)
    t.equal(run.stdout, '', `${label}: no answer, so no empty list that reads as "nothing there"`)
    t.notMatch(run.stderr, /\n\s+at /, `${label}: no stack trace`)
  }
}

t.before(() => {
  if (!existsSync(builtEntry('dist/cli/portier.js'))) throw new Error('dist/ is missing: run `npm run build` (npm test does)')
})

t.test('run from another folder (the default ./data/identity.db): refused, naming the absolute path; nothing created', async (t) => {
  const elsewhere = tempDir(t, 'portier-elsewhere-')
  await refused(t, elsewhere, {}, new RegExp(`no database at ${escape(join(elsewhere, 'data', 'identity.db'))} \\(\\./data/identity\\.db is read from the current folder\\)\\. ` +
    'The CLI never creates one .*set IDENTITY_DATABASE_PATH to the file identity uses'), COMMANDS)
  t.same(readdirSync(elsewhere), [], 'no data folder, no file')
})

t.test('a wrong path: a missing file, a missing folder, a relative path', async (t) => {
  const dir = tempDir(t, 'portier-wrong-path-')
  const missingFile = join(dir, 'identity.db')
  await refused(t, REPO_ROOT, { IDENTITY_DATABASE_PATH: missingFile }, new RegExp(`no database at ${escape(missingFile)}\\. `))
  const missingFolder = join(dir, 'not', 'there', 'identity.db')
  await refused(t, REPO_ROOT, { IDENTITY_DATABASE_PATH: missingFolder }, new RegExp(`no database at ${escape(missingFolder)}\\. `))
  await refused(t, dir, { IDENTITY_DATABASE_PATH: 'sub/identity.db' }, new RegExp(`no database at ${escape(join(dir, 'sub', 'identity.db'))} \\(sub/identity\\.db is read from the current folder\\)`))
  t.same(readdirSync(dir), [], 'nothing was created')
})

t.test('a file that is not a Portier database is refused and left unchanged', async (t) => {
  const dir = tempDir(t, 'portier-foreign-')
  const empty = join(dir, 'empty.db')
  writeFileSync(empty, '')
  const foreign = join(dir, 'notes.db')
  const other = new Database(foreign)
  other.exec("CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT); INSERT INTO notes (text) VALUES ('keep me')")
  other.close()
  const text = join(dir, 'readme.txt')
  writeFileSync(text, 'not a database\n'.repeat(200))
  const folder = join(dir, 'a-folder')
  mkdirSync(folder)
  const before = { foreign: digest(foreign), text: digest(text) }

  await refused(t, REPO_ROOT, { IDENTITY_DATABASE_PATH: empty }, new RegExp(`no Portier database in the empty file ${escape(empty)}\\. `))
  await refused(t, REPO_ROOT, { IDENTITY_DATABASE_PATH: foreign },
    new RegExp(`${escape(foreign)} is another program's SQLite database \\(tables notes; no schema_migrations\\): it is left unchanged`))
  await refused(t, REPO_ROOT, { IDENTITY_DATABASE_PATH: text },
    new RegExp(`${escape(text)} cannot be opened as an SQLite database \\(file is not a database\\): it is left unchanged`))
  await refused(t, REPO_ROOT, { IDENTITY_DATABASE_PATH: folder }, new RegExp(`${escape(folder)} cannot be opened as an SQLite database`))

  t.equal(readFileSync(empty).length, 0, 'the empty file is still empty')
  t.equal(digest(foreign), before.foreign, 'the other program\'s database is byte for byte the same')
  t.equal(digest(text), before.text, 'the text file is the same')
  t.same(readdirSync(folder), [], 'nothing was written in the folder')
  t.same(readdirSync(dir).sort(), ['a-folder', 'empty.db', 'notes.db', 'readme.txt'], 'no -wal or -shm beside them')
})

t.test('the identity server initialises a missing or empty file, and refuses another program\'s database (exit 78), leaving it unchanged', async (t) => {
  const dir = tempDir(t, 'portier-server-')
  const env = async (path: string): Promise<Record<string, string>> => ({
    IDENTITY_HOST: '127.0.0.1',
    IDENTITY_PORT: String(await freePort()),
    IDENTITY_ADMIN_PORT: String(await freePort()),
    IDENTITY_DATABASE_PATH: path,
    IDENTITY_ADMIN_TOKEN: randomBytes(24).toString('hex'),
    IDENTITY_SERVICE_TOKEN: randomBytes(24).toString('hex'),
    ...WITH_SIGNING_KEY_ENCRYPTION,
    LOG_LEVEL: 'info'
  })
  const foreign = join(dir, 'notes.db')
  const other = new Database(foreign)
  other.exec('CREATE TABLE notes (id INTEGER PRIMARY KEY)')
  other.close()
  const before = digest(foreign)
  const refused = startProcess(t, 'dist/identity/server.js', await env(foreign), /listening/)
  t.equal((await refused.exited).code, EXIT_CONFIG, 'exit 78')
  t.match(refused.stderr(), `${foreign} is another program's SQLite database (tables notes; no schema_migrations)`)
  t.notMatch(refused.stderr(), /\n\s+at /, 'no stack trace')
  t.equal(digest(foreign), before, 'left unchanged')

  const empty = join(dir, 'empty.db')
  writeFileSync(empty, '')
  for (const path of [empty, join(dir, 'new', 'identity.db')]) {
    const server = startProcess(t, 'dist/identity/server.js', await env(path), /Server listening/)
    t.ok(await server.ready, `the server starts on ${path}`, { stderr: server.stderr() })
    server.child.kill('SIGTERM')
    t.equal((await server.exited).code, 0)
    const db = new Database(path, { readonly: true })
    t.ok(db.prepare("SELECT 1 FROM sqlite_master WHERE name = 'schema_migrations'").get(), 'and initialises it')
    db.close()
    // The CLI now works on it.
    const listed = await portier(REPO_ROOT, { IDENTITY_DATABASE_PATH: path }, ['users', 'list'])
    t.equal(listed.code, 0, 'the CLI then works on it', { stderr: listed.stderr })
    t.same(JSON.parse(listed.stdout), { users: [] })
  }
})
