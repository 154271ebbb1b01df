import { join } from 'node:path'
import type { Test } from 'tap'
import { tempDir } from './temp.js'
import { writeMockUpstreamsFile } from './upstreams-file.js'
import { freePort } from './redis.js'

/** The last line of either `npm start` banner: everything above it has been printed. */
export const DEMO_STARTED = /Ctrl-C stops Portier/

export interface DemoEnvironment {
  env: Record<string, string>
  /** The data folder (holds identity.db and credentials.json); not created here. */
  dir: string
  databasePath: string
  gateway: string
  /** The gateway's private metrics listener. */
  metrics: string
  identityAdmin: string
}

/**
 * Free ports for `npm start`'s six listeners (each its own, so that runs side by side
 * never meet on a default port), a data folder, and an upstreams file aimed at this
 * run's mock, in a new temporary folder unless `root` is given.
 */
export async function demoEnvironment (t: Test, extra: Record<string, string> = {}, root = tempDir(t, 'portier-demo-')): Promise<DemoEnvironment> {
  const [gatewayPort, metricsPort, identityPort, adminPort, mockPort, consolePort] = await Promise.all([freePort(), freePort(), freePort(), freePort(), freePort(), freePort()])
  const upstreams = writeMockUpstreamsFile(root, `http://127.0.0.1:${mockPort}`)
  const dir = join(root, 'data')
  const databasePath = join(dir, 'identity.db')
  return {
    env: {
      GATEWAY_PORT: String(gatewayPort),
      GATEWAY_METRICS_PORT: String(metricsPort),
      IDENTITY_PORT: String(identityPort),
      IDENTITY_ADMIN_PORT: String(adminPort),
      UPSTREAM_MOCK_PORT: String(mockPort),
      CONSOLE_PORT: String(consolePort),
      IDENTITY_DATABASE_PATH: databasePath,
      GATEWAY_UPSTREAMS_FILE: upstreams,
      LOG_LEVEL: 'info',
      // npm start writes readable lines by default; the tests read JSON ones (test/demo/pretty-logs.test.ts reads the others).
      LOG_FORMAT: 'json',
      ...extra
    },
    dir,
    databasePath,
    gateway: `http://127.0.0.1:${gatewayPort}`,
    metrics: `http://127.0.0.1:${metricsPort}`,
    identityAdmin: `http://127.0.0.1:${adminPort}`
  }
}
