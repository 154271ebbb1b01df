import { randomBytes } from 'node:crypto'
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import { dirname } from 'node:path'
import { ConfigError } from '../common/config.js'
import { readCredentialsFile } from '../identity/store/credentials-file.js'
import { DATABASE_FOLDER_MODE } from '../identity/store/database-permissions.js'

/**
 * What a one-process start generates: the two HTTP credentials identity requires and
 * the gateway shares (never a default: it would open every install), and the key that encrypts
 * signing private keys at rest.
 */
export interface ServiceCredentials {
  adminToken: string
  serviceToken: string
  signingKeyEncryptionKey: string
  /** Encrypts the console's session cookie (CONSOLE_COOKIE_SECRET). */
  consoleCookieSecret: string
}

/** Same floor as identity's schema: a shorter value would be refused there anyway. */
const MIN_LENGTH = 32
const SOURCE = 'one-process start'
const FILE_MODE = 0o600

function generate (): string {
  return randomBytes(32).toString('hex')
}

/** What the file holds; a file written before encryption at rest has no key. */
interface StoredFile {
  adminToken: string
  serviceToken: string
  signingKeyEncryptionKey?: string | undefined
  /** Absent from a file written before the console. */
  consoleCookieSecret?: string | undefined
}

function read (file: string): StoredFile {
  // The console's secret is the one-process start's own: identity's reader does not name it.
  let parsed: Record<string, unknown>
  try {
    parsed = { ...readCredentialsFile(file) }
  } catch (err) {
    throw new ConfigError(SOURCE, [`${file}: is not readable JSON (${(err as Error).message.split('\n', 1)[0] ?? ''}); delete it to generate new credentials`])
  }
  const problems: string[] = []
  const names = ['adminToken', 'serviceToken', ...(parsed.signingKeyEncryptionKey !== undefined ? ['signingKeyEncryptionKey' as const] : []),
    ...(parsed.consoleCookieSecret !== undefined ? ['consoleCookieSecret' as const] : [])] as const
  for (const name of names) {
    const value = parsed[name]
    if (typeof value !== 'string' || value.length < MIN_LENGTH) problems.push(`${file}: ${name}: must be a string of at least ${MIN_LENGTH} characters`)
  }
  if (problems.length > 0) throw new ConfigError(SOURCE, problems)
  // Checked above: each member present is a long enough string.
  const text = (name: string): string | undefined => parsed[name] as string | undefined
  return { adminToken: text('adminToken') as string, serviceToken: text('serviceToken') as string, signingKeyEncryptionKey: text('signingKeyEncryptionKey'), consoleCookieSecret: text('consoleCookieSecret') }
}

/** Writes the file in one step (a crash leaves the old or the new one, never half of it), owner-only; undefined members are left out. */
function write (file: string, content: StoredFile, exclusive: boolean): void {
  const text = `${JSON.stringify(content, null, 2)}\n`
  if (exclusive) {
    writeFileSync(file, text, { mode: FILE_MODE, flag: 'wx' })
    return
  }
  const temporary = `${file}.${process.pid}.tmp`
  writeFileSync(temporary, text, { mode: FILE_MODE, flag: 'wx' })
  renameSync(temporary, file)
}

export interface KeptCredentials {
  credentials: ServiceCredentials
  /**
   * Writes what was generated to the file (readable by its owner only): all of it for
   * a new file, the encryption key added to an older file that lacks it. Returns what
   * puts the file back as it was, for a start that fails after it (a generated key
   * must not stay next to a database it never encrypted). A no-op when nothing was generated.
   */
  keep: () => () => void
}

/**
 * The credentials of a one-process start: IDENTITY_ADMIN_TOKEN,
 * IDENTITY_SERVICE_TOKEN and IDENTITY_SIGNING_KEY_ENCRYPTION_KEY when set; otherwise
 * those an earlier start kept in `file`; otherwise new random ones, which `keep`
 * writes to `file` once the rest of the configuration is known to be valid, so that
 * a second start (and whoever runs the CLI or calls the admin API) finds the same
 * ones. A file from before encryption at rest gains a key (unless the variable is
 * set): identity then encrypts the stored signing keys at its start.
 */
export function credentialsFor (file: string, env: Record<string, string | undefined>): KeptCredentials {
  const exists = existsSync(file)
  const stored: StoredFile = exists ? read(file) : { adminToken: generate(), serviceToken: generate() }
  const envKey = env.IDENTITY_SIGNING_KEY_ENCRYPTION_KEY
  // Generated only when nothing else provides one: a key set in the environment stays the operator's.
  const generatedKey = stored.signingKeyEncryptionKey === undefined && envKey === undefined ? generate() : undefined
  const envCookieSecret = env.CONSOLE_COOKIE_SECRET
  const generatedCookieSecret = stored.consoleCookieSecret === undefined && envCookieSecret === undefined ? generate() : undefined
  const toStore: StoredFile = {
    ...stored,
    signingKeyEncryptionKey: stored.signingKeyEncryptionKey ?? generatedKey,
    consoleCookieSecret: stored.consoleCookieSecret ?? generatedCookieSecret
  }
  return {
    credentials: {
      adminToken: env.IDENTITY_ADMIN_TOKEN ?? stored.adminToken,
      serviceToken: env.IDENTITY_SERVICE_TOKEN ?? stored.serviceToken,
      signingKeyEncryptionKey: envKey ?? toStore.signingKeyEncryptionKey as string,
      consoleCookieSecret: envCookieSecret ?? toStore.consoleCookieSecret as string
    },
    keep () {
      if (!exists) {
        // The folder also holds the database: owner-only (see identity/store/database-permissions.ts).
        mkdirSync(dirname(file), { recursive: true, mode: DATABASE_FOLDER_MODE })
        write(file, toStore, true)
        return () => {}
      }
      if (generatedKey === undefined && generatedCookieSecret === undefined) return () => {}
      const previous = readFileSync(file)
      write(file, toStore, false)
      return () => { writeFileSync(file, previous, { mode: FILE_MODE }) }
    }
  }
}
