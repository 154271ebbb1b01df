import t, { type Test } from 'tap'
import Database from 'better-sqlite3'
import { chmodSync, existsSync, mkdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { openDatabase } from '../../identity/store/database.js'
import { startIdentity, tempDir } from '../helpers/identity.js'

/**
 * identity.db holds password and key hashes and the signing keys; its WAL holds recent
 * pages of all of it. The folder identity creates is 0700 and every database file 0600,
 * whatever the umask; loose files of an older install are tightened at open (logged);
 * an existing folder is left as it is, with a note when others can enter it.
 */

const modeOf = (path: string): number => statSync(path).mode & 0o777
const octal = (mode: number): string => `0${mode.toString(8)}`

function assertOwnerOnly (t: Test, databasePath: string, label: string): void {
  for (const suffix of ['', '-wal', '-shm']) {
    const file = `${databasePath}${suffix}`
    t.ok(existsSync(file), `${label}: identity.db${suffix} exists while open`)
    t.equal(octal(modeOf(file)), '0600', `${label}: identity.db${suffix} is 0600`)
  }
}

t.test('a new database: folder 0700, identity.db, -wal and -shm 0600, even with umask 000', async (t) => {
  const previous = process.umask(0)
  t.teardown(() => { process.umask(previous) })
  const databasePath = join(tempDir(t), 'new', 'nested', 'identity.db')
  const identity = await startIdentity(t, {}, { databasePath })
  t.equal(octal(modeOf(join(databasePath, '..'))), '0700', 'the folder identity created is 0700')
  t.equal(octal(modeOf(join(databasePath, '..', '..'))), '0700', 'so is every folder it created on the way')
  assertOwnerOnly(t, databasePath, 'server')
  t.notOk(identity.logText().includes('database folder'), 'no note about a folder identity created itself')
})

t.test('openDatabase (what the CLI and scripts use) creates the same modes', async (t) => {
  const previous = process.umask(0)
  t.teardown(() => { process.umask(previous) })
  const databasePath = join(tempDir(t), 'cli', 'identity.db')
  const db = openDatabase(databasePath)
  t.teardown(() => { db.close() })
  db.exec('CREATE TABLE scratch (x INTEGER)')
  assertOwnerOnly(t, databasePath, 'openDatabase')
})

t.test('an older install: loose files are set to 0600 and logged; the folder is left, with a note', async (t) => {
  const folder = join(tempDir(t), 'data')
  mkdirSync(folder, { mode: 0o755 })
  chmodSync(folder, 0o755)
  const databasePath = join(folder, 'identity.db')
  // Identity's database as an earlier version left it under umask 022, kept open so that its WAL and shared memory exist.
  openDatabase(databasePath).close()
  const older = new Database(databasePath)
  older.pragma('journal_mode = WAL')
  older.prepare('SELECT count(*) FROM schema_migrations').get()
  for (const suffix of ['', '-wal', '-shm']) chmodSync(`${databasePath}${suffix}`, 0o644)

  const identity = await startIdentity(t, {}, { databasePath })
  older.close()
  for (const suffix of ['', '-wal', '-shm']) {
    t.equal(octal(modeOf(`${databasePath}${suffix}`)), '0600', `identity.db${suffix} tightened to 0600`)
  }
  const lines = identity.logs.map((l) => ({ level: l.level, msg: String(l.msg) }))
  for (const name of ['identity.db', 'identity.db-wal', 'identity.db-shm']) {
    t.ok(lines.some((l) => l.level === 30 && l.msg === `database file ${name} was 0644: set to 0600 (owner only)`), `logged: ${name} tightened`)
  }
  t.equal(octal(modeOf(folder)), '0755', 'the existing folder is not changed')
  const note = lines.find((l) => l.level === 30 && l.msg.startsWith(`the database folder ${folder} is 0755`))
  t.ok(note, 'a note names the folder and its mode')
  t.match(note?.msg, /chmod 700/, 'and says how to hide the names too')
})
