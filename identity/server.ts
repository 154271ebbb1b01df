import closeWithGrace from 'close-with-grace'
import { ConfigError } from '../common/config.js'
import { buildIdentity } from './app.js'
import { loadIdentityConfig } from './config.js'

/** In-flight requests get this long to finish on SIGTERM/SIGINT. */
const SHUTDOWN_GRACE_MS = 10_000

/** Runs identity: reads the environment, listens on both ports, shuts down cleanly on signals. */
async function main (): Promise<void> {
  let config
  try {
    config = loadIdentityConfig()
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`)
      if (err.problems.some((p) => p.endsWith('_TOKEN: is required'))) {
        process.stderr.write('Generate a credential with: openssl rand -hex 32\n')
      }
      process.exit(78) // EX_CONFIG
    }
    throw err
  }
  const identity = await buildIdentity(config)
  closeWithGrace({ delay: SHUTDOWN_GRACE_MS }, async ({ signal, err }) => {
    if (err !== undefined) identity.publicApp.log.error({ err }, 'shutting down after an error')
    else identity.publicApp.log.info({ signal }, 'shutting down')
    await identity.close()
  })
  await identity.publicApp.listen({ host: config.host, port: config.port })
  await identity.adminApp.listen({ host: config.adminHost, port: config.adminPort })
}

await main()
