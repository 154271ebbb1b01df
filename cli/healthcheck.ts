/**
 * `node dist/cli/healthcheck.js <url>`: the container HEALTHCHECK. The runtime image
 * has no curl or wget, and Node is already there. Exit 0 on a 2xx within 2 s, else 1.
 */
import { probeHealth } from './health-probe.js'

const [url, ...rest] = process.argv.slice(2)
const result = url === undefined || rest.length > 0
  ? { code: 1, line: 'usage: node dist/cli/healthcheck.js <url>' }
  : await probeHealth(url)
process.stdout.write(`${result.line}\n`)
// Exit now: fetch's keep-alive pool would otherwise hold the process open for seconds.
process.exit(result.code)
