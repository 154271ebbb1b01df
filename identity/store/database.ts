import Database from 'better-sqlite3'
import { mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import { migrate } from './migrations.js'

export type Db = Database.Database

const BUSY_TIMEOUT_MS = 5_000

/**
 * Opens identity's SQLite database: WAL so readers never block the writer,
 * a busy timeout so the CLI and the server can share the file, foreign keys
 * enforced, and every pending migration applied.
 */
export function openDatabase (path: string): Db {
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true })
  const db = new Database(path)
  db.pragma('journal_mode = WAL')
  db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`)
  db.pragma('foreign_keys = ON')
  // FULL makes each committed transaction durable across power loss, not only crashes.
  db.pragma('synchronous = FULL')
  migrate(db)
  return db
}
