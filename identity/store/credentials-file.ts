import { existsSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { IdentityEnvSchema } from '../config.js'

/**
 * The credentials file `npm start` keeps beside the database (0600): the admin and
 * service tokens and the key that encrypts signing private keys at rest. The
 * one-process start writes it; the CLI reads the encryption key from it, so that a
 * CLI run on the same database opens the same signing keys without being told.
 */
export const CREDENTIALS_FILE_NAME = 'credentials.json'

const ENCRYPTION_KEY_VARIABLE = 'IDENTITY_SIGNING_KEY_ENCRYPTION_KEY'
const DEFAULT_DATABASE_PATH = (IdentityEnvSchema.properties.IDENTITY_DATABASE_PATH as unknown as { default: string }).default

/** The members of the file; each is checked by whoever uses it. */
export interface StoredCredentials {
  adminToken?: unknown
  serviceToken?: unknown
  signingKeyEncryptionKey?: unknown
}

/** The database path an environment names (identity's default when unset). */
export function databasePathOf (env: Record<string, string | undefined>): string {
  return env.IDENTITY_DATABASE_PATH ?? DEFAULT_DATABASE_PATH
}

export function credentialsFileBeside (databasePath: string): string {
  return join(dirname(databasePath), CREDENTIALS_FILE_NAME)
}

/** The parsed file; throws when it is not readable JSON (the message is the parser's, never the content). */
export function readCredentialsFile (file: string): StoredCredentials {
  const parsed: unknown = JSON.parse(readFileSync(file, 'utf8'))
  return typeof parsed === 'object' && parsed !== null ? parsed as StoredCredentials : {}
}

/**
 * `env`, with IDENTITY_SIGNING_KEY_ENCRYPTION_KEY taken from the credentials file
 * beside the database when the variable is unset and the file holds one. A missing
 * or unreadable file changes nothing: identity then says what it needs.
 */
export function withStoredEncryptionKey (env: Record<string, string | undefined>): Record<string, string | undefined> {
  if (env[ENCRYPTION_KEY_VARIABLE] !== undefined) return env
  const file = credentialsFileBeside(databasePathOf(env))
  if (!existsSync(file)) return env
  let stored: StoredCredentials
  try {
    stored = readCredentialsFile(file)
  } catch {
    return env
  }
  return typeof stored.signingKeyEncryptionKey === 'string' ? { ...env, [ENCRYPTION_KEY_VARIABLE]: stored.signingKeyEncryptionKey } : env
}
