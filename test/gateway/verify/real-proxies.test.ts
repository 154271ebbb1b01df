import t, { type Test } from 'tap'
import { spawn } from 'node:child_process'
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { connect } from 'node:net'
import { join } from 'node:path'
import { freePort } from '../../../harness/ports.js'
import { assertStatus } from '../../helpers/assert.js'
import { http } from '../../helpers/http.js'
import { repoPath } from '../../helpers/repo-root.js'
import { tempDir } from '../../helpers/temp.js'
import { startVerifyStack, type VerifyStack } from './verify-stack.js'

/**
 * The deploy examples (deploy/verify/nginx.conf and Caddyfile), run by the real nginx
 * and Caddy of Debian's packages in front of the upstream mock, asking the gateway's
 * verify listener: what operators copy is what is proven to work.
 */

const hostPort = (url: string): string => new URL(url).host

/** A deploy template with its addresses filled in. */
function render (template: string, addresses: { listen: string, upstream: string, verify: string }): string {
  return readFileSync(repoPath('deploy', 'verify', template), 'utf8')
    .replaceAll('{{LISTEN}}', addresses.listen)
    .replaceAll('{{UPSTREAM}}', addresses.upstream)
    .replaceAll('{{VERIFY}}', addresses.verify)
}

async function listening (port: number, timeoutMs = 10_000): Promise<boolean> {
  const until = Date.now() + timeoutMs
  while (Date.now() < until) {
    const open = await new Promise<boolean>((resolve) => {
      const socket = connect({ host: '127.0.0.1', port })
      socket.once('connect', () => { socket.destroy(); resolve(true) })
      socket.once('error', () => { resolve(false) })
    })
    if (open) return true
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  return false
}

/** Runs `command` until the test ends; resolves once `port` takes connections, with what the program wrote meanwhile. */
async function run (t: Test, command: string, args: string[], env: Record<string, string>, port: number): Promise<void> {
  let output = ''
  const child = spawn(command, args, { env: { PATH: process.env.PATH ?? '/usr/bin:/bin:/usr/sbin:/sbin', ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
  child.stdout.on('data', (chunk: Buffer) => { output += chunk.toString() })
  child.stderr.on('data', (chunk: Buffer) => { output += chunk.toString() })
  const failed = new Promise<never>((_resolve, reject) => {
    child.once('error', (err) => { reject(new Error(`${command} could not start (${err.message}): .ci/run installs it`)) })
    child.once('exit', (code) => { reject(new Error(`${command} exited (${String(code)}):\n${output}`)) })
  })
  t.teardown(async () => {
    if (child.exitCode !== null || child.signalCode !== null) return
    const exited = new Promise((resolve) => child.once('exit', resolve))
    child.kill('SIGTERM')
    await exited
  })
  await Promise.race([failed, listening(port).then((open) => { if (!open) throw new Error(`${command} did not listen on ${port}:\n${output}`) })])
}

async function startNginx (t: Test, s: VerifyStack): Promise<string> {
  const dir = tempDir(t, 'portier-nginx-')
  for (const sub of ['body', 'proxy', 'fastcgi', 'uwsgi', 'scgi']) mkdirSync(join(dir, 'tmp', sub), { recursive: true })
  const port = await freePort()
  const conf = join(dir, 'nginx.conf')
  writeFileSync(conf, render('nginx.conf', { listen: `127.0.0.1:${port}`, upstream: hostPort(s.upstreamUrl), verify: hostPort(s.verifyUrl) }))
  await run(t, 'nginx', ['-p', dir, '-c', conf, '-e', join(dir, 'error.log'), '-g', 'daemon off;'], {}, port)
  return `http://127.0.0.1:${port}`
}

async function startCaddy (t: Test, s: VerifyStack): Promise<string> {
  const dir = tempDir(t, 'portier-caddy-')
  const port = await freePort()
  const caddyfile = join(dir, 'Caddyfile')
  writeFileSync(caddyfile, render('Caddyfile', { listen: `127.0.0.1:${port}`, upstream: hostPort(s.upstreamUrl), verify: hostPort(s.verifyUrl) }))
  await run(t, 'caddy', ['run', '--config', caddyfile, '--adapter', 'caddyfile'],
    { HOME: dir, XDG_DATA_HOME: join(dir, 'data'), XDG_CONFIG_HOME: join(dir, 'config') }, port)
  return `http://127.0.0.1:${port}`
}

t.test('nginx auth_request and Caddy forward_auth, as deploy/verify configures them', async (t) => {
  const s = await startVerifyStack(t, { roles: { reader: ['users:list'] } })
  const proxies: Array<[string, string]> = [['nginx', await startNginx(t, s)], ['caddy', await startCaddy(t, s)]]
  const reader = await s.createKey(['debug:read'])
  const stranger = await s.createKey(['users:list'])
  const limited = await s.createKey(['debug:read'], { policies: [{ name: 'two', kind: 'rate', limit: 2, window_seconds: 600, partition: 'key' }] })
  const forged = { 'x-portier-principal': 'key_forged', 'x-portier-permissions': '*', 'x-portier-user': 'usr_forged' }

  for (const [name, base] of proxies) {
    await t.test(name, async (t) => {
      const allowed = await http(`${base}/echo/anything?x=1`, { headers: { 'x-api-key': reader.key, ...forged } })
      assertStatus(t, allowed, 200, 'a key with the permission reaches the API')
      t.equal(allowed.body.path, '/echo/anything', 'the path, as asked')
      t.equal(allowed.body.headers['x-portier-principal'], reader.id, 'the API is told the key, not the client\'s forged one')
      t.equal(allowed.body.headers['x-portier-permissions'], 'debug:read', 'and its permissions')
      t.equal(allowed.body.headers['x-portier-user'] ?? '', '', 'the forged user is gone: none (nginx) or empty (Caddy), as Portier names none')
      t.notOk('x-api-key' in allowed.body.headers, 'the credential stays at the proxy')

      const unknown = await http(`${base}/echo`, { headers: { 'x-api-key': 'pk_live_nothing', ...forged } })
      t.equal(unknown.status, 401, 'an unknown key: 401')
      t.match(unknown.headers['www-authenticate'], /^Bearer/, 'with the challenge')
      const denied = await http(`${base}/echo`, { headers: { 'x-api-key': stranger.key } })
      t.equal(denied.status, 403, 'a key without the permission: 403')
      const unrouted = await http(`${base}/nowhere`, { headers: { 'x-api-key': reader.key } })
      t.ok(unrouted.status === 403 || unrouted.status === 404, `a path the gateway has no route for is refused (${unrouted.status})`)

      for (let i = 0; i < (name === 'nginx' ? 2 : 0); i++) assertStatus(t, await http(`${base}/echo`, { headers: { 'x-api-key': limited.key } }), 200, `within the rate limit (${i + 1})`)
      const over = await http(`${base}/echo`, { headers: { 'x-api-key': limited.key } })
      t.equal(over.status, 429, 'over its rate limit: 429, never a 500')
      t.ok(Number(over.headers['retry-after']) > 0, 'with Retry-After')
      t.match(over.headers.ratelimit, /"two";r=0/, 'and the RateLimit field')
    })
  }
})
