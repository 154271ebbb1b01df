import { randomBytes } from 'node:crypto'
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { dirname } from 'node:path'
import { ConfigError } from '../common/config.js'

/** The two HTTP credentials identity requires and the gateway shares (DESIGN: there is no default one). */
export interface ServiceCredentials {
  adminToken: string
  serviceToken: string
}

/** Same floor as identity's schema: a shorter credential would be refused there anyway. */
const MIN_LENGTH = 32
const SOURCE = 'one-process start'

function generate (): string {
  return randomBytes(32).toString('hex')
}

function read (file: string): ServiceCredentials {
  let parsed: unknown
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8'))
  } catch (err) {
    throw new ConfigError(SOURCE, [`${file}: is not readable JSON (${(err as Error).message.split('\n', 1)[0] ?? ''}); delete it to generate new credentials`])
  }
  const problems: string[] = []
  for (const name of ['adminToken', 'serviceToken'] as const) {
    const value = (parsed as Record<string, unknown> | null)?.[name]
    if (typeof value !== 'string' || value.length < MIN_LENGTH) problems.push(`${file}: ${name}: must be a string of at least ${MIN_LENGTH} characters`)
  }
  if (problems.length > 0) throw new ConfigError(SOURCE, problems)
  return parsed as ServiceCredentials
}

export interface KeptCredentials {
  credentials: ServiceCredentials
  /** Writes newly generated credentials to the file (readable by its owner only); a no-op when they were read from it. */
  keep: () => void
}

/**
 * The credentials of a one-process start: IDENTITY_ADMIN_TOKEN and
 * IDENTITY_SERVICE_TOKEN when set; otherwise those an earlier start kept in `file`;
 * otherwise new random ones, which `keep` writes to `file` once the rest of the
 * configuration is known to be valid, so that a second start (and whoever runs the
 * CLI or calls the admin API) finds the same ones.
 */
export function credentialsFor (file: string, env: Record<string, string | undefined>): KeptCredentials {
  const exists = existsSync(file)
  const stored = exists ? read(file) : { adminToken: generate(), serviceToken: generate() }
  return {
    credentials: {
      adminToken: env.IDENTITY_ADMIN_TOKEN ?? stored.adminToken,
      serviceToken: env.IDENTITY_SERVICE_TOKEN ?? stored.serviceToken
    },
    keep () {
      if (exists) return
      mkdirSync(dirname(file), { recursive: true })
      writeFileSync(file, `${JSON.stringify(stored, null, 2)}\n`, { mode: 0o600, flag: 'wx' })
    }
  }
}
