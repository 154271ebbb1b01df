import closeWithGrace from 'close-with-grace'
import { parseArgs } from 'node:util'
import { ConfigError } from '../common/config.js'
import { useLogFormat } from '../common/log-destination.js'
import { buildUpstreamMock } from './app.js'
import { loadUpstreamMockConfig, MAX_USERS, MIN_USERS } from './config.js'

/** In-flight requests get this long to finish on SIGTERM/SIGINT. */
const SHUTDOWN_GRACE_MS = 10_000

const USAGE = `Usage: upstream-mock [--users <n>]

Back-office resource service (users, tasks, meetings) for Portier demos, tests and benchmarks.

  --users <n>  seeded users, ${MIN_USERS}..${MAX_USERS} (overrides UPSTREAM_MOCK_USERS)
`

/** Stops with EX_USAGE (64), saying why: flags are the only input the environment does not cover. */
function refuseFlags (message: string): never {
  process.stderr.write(`upstream-mock: ${message}\n\n${USAGE}`)
  process.exit(64)
}

/**
 * The one flag, read with Node's own argument parser: a service needs no command-line
 * framework (that belongs to the portier CLI).
 */
function readFlags (argv: string[]): { users?: number } {
  let values
  try {
    values = parseArgs({ args: argv, options: { users: { type: 'string' }, help: { type: 'boolean', short: 'h' } }, strict: true }).values
  } catch (err) {
    refuseFlags((err as Error).message)
  }
  if (values.help === true) {
    process.stdout.write(USAGE)
    process.exit(0)
  }
  if (values.users === undefined) return {}
  const users = Number(values.users)
  if (!/^\d+$/.test(values.users) || users < MIN_USERS || users > MAX_USERS) {
    refuseFlags(`--users ${values.users}: must be an integer from ${MIN_USERS} to ${MAX_USERS}.`)
  }
  return { users }
}

/** Runs the mock: reads the environment and flags, listens, shuts down cleanly on signals. */
async function main (): Promise<void> {
  const flags = readFlags(process.argv.slice(2))
  let config
  try {
    config = loadUpstreamMockConfig(process.env, flags)
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`)
      process.exit(78) // EX_CONFIG
    }
    throw err
  }
  useLogFormat(config.logFormat ?? 'json')
  const app = await buildUpstreamMock({
    users: config.users, seed: config.seed, logLevel: config.logLevel, timeouts: config.timeouts, unreadBodies: config.unreadBodies, bufferedBodiesMaxBytes: config.bufferedBodiesMaxBytes
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
