/**
 * `portier`: the operator's command line (bin/portier.js, `npm run identity --`).
 * The process ends on its own once the command has closed the database and Redis.
 */
import { runPortier } from './program.js'

process.exitCode = await runPortier(process.argv.slice(2), {
  stdin: process.stdin,
  stdout: process.stdout,
  stderr: process.stderr,
  env: process.env
})
