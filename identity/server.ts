import closeWithGrace from 'close-with-grace'
import { ConfigError } from '../common/config.js'
import { useLogFormat } from '../common/log-destination.js'
import { buildIdentity } from './app.js'
import { loadIdentityConfig } from './config.js'

/** In-flight requests get this long to finish on SIGTERM/SIGINT. */
const SHUTDOWN_GRACE_MS = 10_000

/** A configuration problem ends the process with its message and EX_CONFIG, never a stack. */
function exitOnConfigError (err: unknown): never {
  if (err instanceof ConfigError) {
    process.stderr.write(`${err.message}\n`)
    if (err.problems.some((p) => p.endsWith('_TOKEN: is required'))) {
      process.stderr.write('Generate a credential with: openssl rand -hex 32\n')
    }
    process.exit(78) // EX_CONFIG
  }
  throw err
}

/** Runs identity: reads the environment, listens on both ports, shuts down cleanly on signals. */
async function main (): Promise<void> {
  let config
  let identity
  try {
    config = loadIdentityConfig()
    useLogFormat(config.logFormat ?? 'json')
    // Building may refuse too: stored signing keys the configured secret cannot open.
    identity = await buildIdentity(config)
  } catch (err) {
    exitOnConfigError(err)
  }
  closeWithGrace({ delay: SHUTDOWN_GRACE_MS }, async ({ signal, err }) => {
    if (err !== undefined) identity.publicApp.log.error({ err }, 'shutting down after an error')
    else identity.publicApp.log.info({ signal }, 'shutting down')
    await identity.close()
  })
  await identity.publicApp.listen({ host: config.host, port: config.port })
  await identity.adminApp.listen({ host: config.adminHost, port: config.adminPort })
}

await main()
