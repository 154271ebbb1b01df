import { chmodSync, existsSync, mkdirSync, statSync, writeFileSync } from 'node:fs'
import { basename, dirname } from 'node:path'

/**
 * File modes of identity's database. The file holds password and key hashes, refresh
 * token hashes and the signing private keys (in clear unless encrypted at rest), and
 * its WAL holds recent pages of all of it: owner-only, like an SSH key.
 *
 * SQLite creates `-wal` and `-shm` with the mode of the database file, so creating the
 * database file 0600 before SQLite opens it is what keeps those 0600 too.
 */
export const DATABASE_FOLDER_MODE = 0o700
export const DATABASE_FILE_MODE = 0o600
/** The files SQLite keeps beside the database (`-journal` only outside WAL mode). */
const SIDE_SUFFIXES = ['-wal', '-shm', '-journal']

const isFile = (path: string): boolean => path !== '' && path !== ':memory:' && !path.startsWith('file:')

function filesOf (path: string): string[] {
  return [path, ...SIDE_SUFFIXES.map((suffix) => `${path}${suffix}`)]
}

const octal = (mode: number): string => `0${(mode & 0o777).toString(8)}`

/** What group or others may do with the database's files and folder: found without changing anything. */
export interface DatabaseModes {
  /** Existing files (the database and its side files) that group or others may access, with their mode. */
  looseFiles: Array<{ file: string, mode: number }>
  /** The folder's mode when group or others may access it, null otherwise (or when it does not exist yet). */
  looseFolderMode: number | null
}

export function inspectDatabaseModes (path: string): DatabaseModes {
  if (!isFile(path)) return { looseFiles: [], looseFolderMode: null }
  const looseFiles = filesOf(path).filter(existsSync)
    .map((file) => ({ file, mode: statSync(file).mode }))
    .filter(({ mode }) => (mode & 0o077) !== 0)
  const folder = dirname(path)
  const folderMode = existsSync(folder) ? statSync(folder).mode : null
  return { looseFiles, looseFolderMode: folderMode !== null && (folderMode & 0o077) !== 0 ? folderMode : null }
}

/**
 * Before SQLite opens `path`: a missing folder is created 0700, a missing database
 * file is created empty with 0600 (SQLite treats an empty file as a new database), and
 * existing database files that group or others may access are set to 0600. An existing
 * folder is left as it is (it may be a volume's mount point, or shared with other
 * files): `describeDatabaseModes` notes it instead.
 */
export function prepareDatabaseFiles (path: string): void {
  if (!isFile(path)) return
  mkdirSync(dirname(path), { recursive: true, mode: DATABASE_FOLDER_MODE })
  // 'a' creates the file when missing and leaves an existing one's content alone.
  writeFileSync(path, '', { flag: 'a', mode: DATABASE_FILE_MODE })
  for (const file of filesOf(path)) {
    if (!existsSync(file) || (statSync(file).mode & 0o077) === 0) continue
    try {
      chmodSync(file, DATABASE_FILE_MODE)
    } catch {
      // Another user's file (EPERM): SQLite may still open it; describeDatabaseModes reports it.
    }
  }
}

/**
 * Log lines comparing the modes found before the files were prepared with those after:
 * the files that were tightened and those that could not be (warnings), and a folder
 * that others can still list or enter (a note).
 */
export function describeDatabaseModes (path: string, before: DatabaseModes, after: DatabaseModes = inspectDatabaseModes(path)): { info: string[], warn: string[] } {
  const stillLoose = new Set(after.looseFiles.map(({ file }) => file))
  const info: string[] = before.looseFiles.filter(({ file }) => !stillLoose.has(file))
    .map(({ file, mode }) => `database file ${basename(file)} was ${octal(mode)}: set to ${octal(DATABASE_FILE_MODE)} (owner only)`)
  const warn = after.looseFiles.map(({ file, mode }) => `database file ${file} is ${octal(mode)} and could not be set to ${octal(DATABASE_FILE_MODE)}: other users may read it; make identity's user its owner`)
  if (after.looseFolderMode !== null) {
    // A note, not a warning: the files are what matter, and volumes are often group-owned on purpose (Kubernetes' fsGroup).
    info.push(`the database folder ${dirname(path)} is ${octal(after.looseFolderMode)}: other users can see which files it holds; ` +
      `the files are ${octal(DATABASE_FILE_MODE)}, and chmod ${octal(DATABASE_FOLDER_MODE).slice(1)} on the folder hides them too`)
  }
  return { info, warn }
}
