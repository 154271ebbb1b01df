import Database from 'better-sqlite3'
import { requireIdentityDatabase } from './database-file.js'
import { prepareDatabaseFiles } from './database-permissions.js'
import type { Db } from './db.js'
import { migrate } from './migrations.js'

const BUSY_TIMEOUT_MS = 5_000

export interface OpenDatabaseOptions {
  /**
   * Whether a missing or empty file is initialised (with its folder): the server and
   * `npm start` do (the default); the CLI passes false, and is refused instead.
   */
  create?: boolean
}

/**
 * Opens identity's SQLite database: WAL so readers never block the writer,
 * a busy timeout so the CLI and the server can share the file, foreign keys
 * enforced, and every pending migration applied. A file that is not identity's
 * database is refused with a ConfigError naming it, and left unchanged.
 */
export function openDatabase (path: string, options: OpenDatabaseOptions = {}): Db {
  requireIdentityDatabase(path, options.create ?? true)
  // Folder 0700, files 0600, before SQLite creates any of them (see database-permissions.ts).
  prepareDatabaseFiles(path)
  const db = new Database(path)
  db.pragma('journal_mode = WAL')
  db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`)
  db.pragma('foreign_keys = ON')
  // FULL makes each committed transaction durable across power loss, not only crashes.
  db.pragma('synchronous = FULL')
  migrate(db)
  return db
}

/**
 * Runs `fn` in one transaction whose commit does not wait for the disk
 * (synchronous=NORMAL for this commit only), then restores FULL, and returns what
 * `fn` returned. For bookkeeping that arrives often (the key uses gateways report):
 * in WAL mode such a commit survives a crash of the process and is seen by every
 * reader at once; only a power loss can drop it, and the next FULL commit makes it
 * durable too. A disk sync per key verification, when verifications recorded uses,
 * capped identity at a few hundred verifications a second.
 */
export function commitWithoutSync<T> (db: Db, fn: () => T): T {
  db.pragma('synchronous = NORMAL')
  try {
    return db.transaction(fn)()
  } finally {
    db.pragma('synchronous = FULL')
  }
}
