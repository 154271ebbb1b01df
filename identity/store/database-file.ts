import Database from 'better-sqlite3'
import { existsSync } from 'node:fs'
import { isAbsolute, resolve } from 'node:path'
import { ConfigError } from '../../common/config.js'

/** What a database path holds, found without changing it. */
export type DatabaseFileState =
  | { state: 'missing' }
  /** An SQLite file without a table (a 0-byte file too): nothing to lose by initialising it. */
  | { state: 'empty' }
  | { state: 'portier' }
  /** Tables, but not Portier's (no schema_migrations): another program's database. */
  | { state: 'foreign', tables: string[] }
  | { state: 'unreadable', reason: string }

/** How many of a foreign database's tables a message names. */
const TABLES_NAMED = 5

export function inspectDatabaseFile (path: string): DatabaseFileState {
  if (path === ':memory:') return { state: 'empty' }
  if (!existsSync(path)) return { state: 'missing' }
  let db: Database.Database | undefined
  try {
    // Read-write but without a pragma or a write: opening and reading the catalogue leaves the file as it was.
    db = new Database(path, { fileMustExist: true })
    const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").pluck().all() as string[]
    if (tables.includes('schema_migrations')) return { state: 'portier' }
    return tables.length === 0 ? { state: 'empty' } : { state: 'foreign', tables }
  } catch (err) {
    return { state: 'unreadable', reason: (err as Error).message }
  } finally {
    db?.close()
  }
}

function where (path: string): string {
  const absolute = resolve(path)
  return isAbsolute(path) ? absolute : `${absolute} (${path} is read from the current folder)`
}

/**
 * Refuses a path that is not identity's database, before anything writes to it:
 * another program's SQLite file or a file that is not SQLite are never migrated;
 * and when `create` is false (the CLI), neither a missing file nor an empty one is
 * initialised, since an operator in the wrong folder would otherwise work on a new,
 * empty database that no server reads. Throws a ConfigError naming the absolute path.
 */
export function requireIdentityDatabase (path: string, create: boolean): void {
  const found = inspectDatabaseFile(path)
  const problem = ((): string | null => {
    switch (found.state) {
      case 'portier': return null
      case 'missing':
      case 'empty':
        if (create) return null
        return `IDENTITY_DATABASE_PATH: ${found.state === 'missing' ? 'no database at' : 'no Portier database in the empty file'} ${where(path)}. ` +
          'The CLI never creates one (identity\'s server and npm start do): run it in the folder Portier runs in, ' +
          'or set IDENTITY_DATABASE_PATH to the file identity uses (npm start prints it as "database")'
      case 'foreign': {
        const named = found.tables.slice(0, TABLES_NAMED).join(', ') + (found.tables.length > TABLES_NAMED ? ', …' : '')
        return `IDENTITY_DATABASE_PATH: ${where(path)} is another program's SQLite database (tables ${named}; no schema_migrations): ` +
          'it is left unchanged; point IDENTITY_DATABASE_PATH at identity\'s own file'
      }
      case 'unreadable':
        return `IDENTITY_DATABASE_PATH: ${where(path)} cannot be opened as an SQLite database (${found.reason}): it is left unchanged`
    }
  })()
  if (problem !== null) throw new ConfigError('identity database', [problem])
}
