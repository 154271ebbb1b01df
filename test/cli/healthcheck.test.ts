import t, { type Test } from 'tap'
import { spawn } from 'node:child_process'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { probeHealth } from '../../cli/health-probe.js'
import { freePort } from '../helpers/redis.js'
import { repoPath } from '../helpers/repo-root.js'
import { nodeCommand } from '../helpers/node-command.js'

/** The compiled script the container HEALTHCHECK runs (`npm test` builds before tap runs). */
const SCRIPT = repoPath('dist/cli/healthcheck.js')

async function serve (t: Test, handler: Parameters<typeof createServer>[1]): Promise<string> {
  const server: Server = createServer(handler)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => { server.closeAllConnections(); server.close() })
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

/** Runs the script as Docker does, without blocking this process's event loop (the test server answers from it). */
async function runScript (...args: string[]): Promise<{ code: number | null, stdout: string }> {
  const child = spawn(...nodeCommand([SCRIPT, ...args]), { stdio: ['ignore', 'pipe', 'inherit'] })
  let stdout = ''
  child.stdout.on('data', (chunk: Buffer) => { stdout += chunk.toString() })
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve))
  return { code, stdout }
}

t.test('happy: a 2xx answer exits 0 with one line', async (t) => {
  const base = await serve(t, (_req, res) => { res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ok"}') })
  const run = await runScript(`${base}/healthz`)
  t.equal(run.code, 0, 'exit 0')
  t.equal(run.stdout, `healthy: 200 ${base}/healthz\n`, 'one short line, no body')
})

t.test('error: a 503 (e.g. /readyz before the JWKS is loaded) exits 1', async (t) => {
  const base = await serve(t, (_req, res) => { res.writeHead(503, { 'content-type': 'application/json' }).end('{"status":"not_ready"}') })
  const run = await runScript(`${base}/readyz`)
  t.equal(run.code, 1, 'exit 1')
  t.equal(run.stdout, `unhealthy: 503 ${base}/readyz\n`, 'names the status')
})

t.test('error: a closed port exits 1 naming the socket error', async (t) => {
  const port = await freePort()
  const run = await runScript(`http://127.0.0.1:${port}/healthz`)
  t.equal(run.code, 1, 'exit 1')
  t.equal(run.stdout, `unhealthy: ECONNREFUSED http://127.0.0.1:${port}/healthz\n`)
})

t.test('error: no URL, or more than one argument, is a usage line and exit 1 (Docker reserves 2)', async (t) => {
  for (const args of [[], ['http://127.0.0.1:1/a', 'extra']]) {
    const run = await runScript(...args)
    t.equal(run.code, 1, `exit 1 for ${JSON.stringify(args)}`)
    t.equal(run.stdout, 'usage: node dist/cli/healthcheck.js <url>\n')
  }
})

t.test('error: a redirect, a slow answer and a non-http URL are unhealthy', async (t) => {
  const base = await serve(t, (req, res) => {
    if (req.url === '/moved') res.writeHead(302, { location: '/healthz' }).end()
    // /hang never answers: the probe's own deadline must end it.
  })
  t.same(await probeHealth(`${base}/moved`), { code: 1, line: `unhealthy: 302 ${base}/moved` }, 'redirects are not followed')
  t.same(await probeHealth(`${base}/hang`, 100), { code: 1, line: `unhealthy: no answer in time ${base}/hang` }, 'the deadline ends the wait')
  t.same(await probeHealth('file:///etc/passwd'), { code: 1, line: 'unhealthy: not an http(s) URL: file:///etc/passwd' })
  t.same(await probeHealth('healthz'), { code: 1, line: 'unhealthy: not a URL: healthz' })
})
