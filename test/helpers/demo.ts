import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { Test } from 'tap'
import { DEFAULT_UPSTREAMS_FILE } from './gateway.js'
import { tempDir } from './identity.js'
import { freePort } from './redis.js'

/** The last line of either `npm start` banner: everything above it has been printed. */
export const DEMO_STARTED = /Ctrl-C stops Portier/

export interface DemoEnvironment {
  env: Record<string, string>
  /** The data folder (holds identity.db and credentials.json); not created here. */
  dir: string
  databasePath: string
  gateway: string
}

/** Free ports for `npm start`'s four listeners, a data folder, and an upstreams file aimed at this run's mock. */
export async function demoEnvironment (t: Test, extra: Record<string, string> = {}): Promise<DemoEnvironment> {
  const [gatewayPort, identityPort, adminPort, mockPort] = await Promise.all([freePort(), freePort(), freePort(), freePort()])
  const root = tempDir(t, 'portier-demo-')
  const upstreams = join(root, 'upstreams.yaml')
  writeFileSync(upstreams, readFileSync(DEFAULT_UPSTREAMS_FILE, 'utf8').replaceAll('http://127.0.0.1:4000', `http://127.0.0.1:${mockPort}`))
  const dir = join(root, 'data')
  const databasePath = join(dir, 'identity.db')
  return {
    env: {
      GATEWAY_PORT: String(gatewayPort),
      IDENTITY_PORT: String(identityPort),
      IDENTITY_ADMIN_PORT: String(adminPort),
      UPSTREAM_MOCK_PORT: String(mockPort),
      IDENTITY_DATABASE_PATH: databasePath,
      GATEWAY_UPSTREAMS_FILE: upstreams,
      LOG_LEVEL: 'info',
      ...extra
    },
    dir,
    databasePath,
    gateway: `http://127.0.0.1:${gatewayPort}`
  }
}
