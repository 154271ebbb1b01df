import closeWithGrace from 'close-with-grace'
import { ConfigError } from '../common/config.js'
import { useLogFormat } from '../common/log-destination.js'
import { buildConsole } from './app.js'
import { loadConsoleConfig } from './config.js'

/** `npm run console`: the console alone, configured by CONSOLE_* variables. */
async function main (): Promise<void> {
  let config
  try {
    config = loadConsoleConfig()
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`)
      process.exit(78) // EX_CONFIG, as the other services
    }
    throw err
  }
  useLogFormat(config.logFormat ?? 'json')
  const app = await buildConsole(config)
  closeWithGrace({ delay: 10_000 }, async () => { await app.close() })
  await app.listen({ host: config.host, port: config.port })
}

await main()
