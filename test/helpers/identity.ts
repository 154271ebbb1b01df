import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import { tempDir, type Teardown } from './temp.js'
import { buildIdentity, type Identity } from '../../identity/app.js'
import { loadIdentityConfig, type IdentityConfig } from '../../identity/config.js'
import type { Clock } from '../../identity/services/clock.js'
import { captureLogs } from './logs.js'
import { WITH_SIGNING_KEY_ENCRYPTION } from './signing-key-encryption.js'

export interface TestIdentity {
  identity: Identity
  config: IdentityConfig
  publicUrl: string
  adminUrl: string
  adminToken: string
  serviceToken: string
  databasePath: string
  /** What a CLI run on this identity's file needs: the path and the same signing key encryption key. */
  cliEnv: Record<string, string>
  /** Every log line both apps wrote, as parsed JSON. */
  logs: Array<Record<string, unknown>>
  /** The raw log text, for "no secret appears anywhere" checks. */
  logText: () => string
}

// Light helpers, re-exported for the suites that already take them from here.
export { tempDir, type Teardown } from './temp.js'

/** Where a fake clock starts unless told otherwise: 2026-01-01T00:00:00Z. */
export const START = Date.parse('2026-01-01T00:00:00Z')

/** An instant (ms since the epoch) as the API writes it. */
export const iso = (ms: number): string => new Date(ms).toISOString()

export type FakeClock = Clock & { advance: (ms: number) => void }

/** A fake clock tests move by hand. */
export function fakeClock (start = START): FakeClock {
  let now = start
  return { now: () => now, advance: (ms) => { now += ms } }
}

/**
 * Builds identity on a temporary SQLite file and listens on loopback port 0 for both
 * apps. `env` overrides the defaults (e.g. REDIS_URL, IDENTITY_EVENTS_CHANNEL); the
 * signing keys are encrypted with the test key unless it says otherwise.
 */
export async function startIdentity (t: Teardown, env: Record<string, string> = {}, options: { clock?: Clock, databasePath?: string } = {}): Promise<TestIdentity> {
  const databasePath = options.databasePath ?? join(tempDir(t), 'identity.db')
  const adminToken = randomBytes(24).toString('hex')
  const serviceToken = randomBytes(24).toString('hex')
  const config = loadIdentityConfig({
    IDENTITY_DATABASE_PATH: databasePath,
    IDENTITY_ADMIN_TOKEN: adminToken,
    IDENTITY_SERVICE_TOKEN: serviceToken,
    IDENTITY_EVENTS_CHANNEL: `portier:test:${randomBytes(6).toString('hex')}`,
    LOG_LEVEL: 'info',
    ...WITH_SIGNING_KEY_ENCRYPTION,
    ...env
  })
  const logs = captureLogs()
  const identity = await buildIdentity(config, { logStream: logs.stream, ...(options.clock !== undefined ? { clock: options.clock } : {}) })
  t.teardown(() => identity.close())
  const publicUrl = await identity.publicApp.listen({ host: '127.0.0.1', port: 0 })
  const adminUrl = await identity.adminApp.listen({ host: '127.0.0.1', port: 0 })
  const cliEnv = {
    IDENTITY_DATABASE_PATH: databasePath,
    ...(config.signingKeyEncryptionKey !== undefined ? { IDENTITY_SIGNING_KEY_ENCRYPTION_KEY: config.signingKeyEncryptionKey } : {}),
    ...(config.signingKeyEncryptionRequired ? {} : { IDENTITY_SIGNING_KEY_ENCRYPTION: 'off' })
  }
  return { identity, config, publicUrl, adminUrl, adminToken, serviceToken, databasePath, cliEnv, logs: logs.lines, logText: logs.text }
}
