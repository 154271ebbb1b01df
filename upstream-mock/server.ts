import closeWithGrace from 'close-with-grace'
import { Command, InvalidArgumentError } from 'commander'
import { ConfigError } from '../common/config.js'
import { buildUpstreamMock } from './app.js'
import { loadUpstreamMockConfig, MAX_USERS, MIN_USERS } from './config.js'

/** In-flight requests get this long to finish on SIGTERM/SIGINT. */
const SHUTDOWN_GRACE_MS = 10_000

function parseUsers (value: string): number {
  const users = Number(value)
  if (!/^\d+$/.test(value) || users < MIN_USERS || users > MAX_USERS) {
    throw new InvalidArgumentError(`must be an integer from ${MIN_USERS} to ${MAX_USERS}.`)
  }
  return users
}

/** Runs the mock: reads the environment and flags, listens, shuts down cleanly on signals. */
async function main (): Promise<void> {
  const flags = new Command('upstream-mock')
    .description('Back-office resource service (users, tasks, meetings) for Portier demos, tests and benchmarks.')
    .option('--users <n>', `seeded users, ${MIN_USERS}..${MAX_USERS} (overrides UPSTREAM_MOCK_USERS)`, parseUsers)
    .parse()
    .opts<{ users?: number }>()
  let config
  try {
    config = loadUpstreamMockConfig(process.env, flags.users !== undefined ? { users: flags.users } : {})
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`)
      process.exit(78) // EX_CONFIG
    }
    throw err
  }
  const app = await buildUpstreamMock({
    users: config.users, seed: config.seed, logLevel: config.logLevel, timeouts: config.timeouts, bufferedBodiesMaxBytes: config.bufferedBodiesMaxBytes
  })
  closeWithGrace({ delay: SHUTDOWN_GRACE_MS }, async ({ signal, err }) => {
    if (err !== undefined) app.log.error({ err }, 'shutting down after an error')
    else app.log.info({ signal }, 'shutting down')
    await app.close()
  })
  await app.listen({ host: config.host, port: config.port })
  app.log.info({ users: config.users, seed: config.seed }, 'upstream-mock ready')
}

await main()
