import t from 'tap'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { runPortierHere, type CliRun } from '../helpers/cli.js'
import { repoPath } from '../helpers/repo-root.js'

/**
 * `portier config check <file>`, run in this process with captured streams and an
 * empty environment: the command reads the file and nothing else.
 */
const DEFAULT_FILE = repoPath('gateway/upstreams.default.yaml')

const portier = async (args: string[]): Promise<CliRun> => await runPortierHere(args)

const dir = mkdtempSync(join(tmpdir(), 'portier-config-check-'))
t.teardown(() => rmSync(dir, { recursive: true, force: true }))
function write (name: string, text: string): string {
  const file = join(dir, name)
  writeFileSync(file, text)
  return file
}

const HEAD = 'upstreams:\n  - name: backoffice\n    target: http://127.0.0.1:4000\n'

t.test('the shipped default file passes', async (t) => {
  const run = await portier(['config', 'check', DEFAULT_FILE])
  t.equal(run.code, 0, 'exit 0', { stderr: run.stderr })
  t.equal(run.stdout, `ok: ${DEFAULT_FILE}: 1 upstream, 25 routes, 1 alias\n`)
  t.equal(run.stderr, '')
})

t.test('counts are pluralised as they should be', async (t) => {
  const file = write('two.yaml', `${HEAD}    aliases: { /utilisateurs: /users, /gens: /users }
    routes:
      - { method: GET, path: /users, permission: users:list }
  - name: billing
    target: http://127.0.0.1:4100
    routes:
      - { method: GET, path: /invoices, permission: invoices:list }
`)
  const run = await portier(['config', 'check', file])
  t.equal(run.code, 0, 'exit 0', { stderr: run.stderr })
  t.equal(run.stdout, `ok: ${file}: 2 upstreams, 2 routes, 2 aliases\n`)
  const json = write('one.json', JSON.stringify({ upstreams: [{ name: 'a', target: 'http://x', routes: [{ method: 'GET', path: '/a', permission: 'a:read' }] }] }))
  t.equal((await portier(['config', 'check', json])).stdout, `ok: ${json}: 1 upstream, 1 route, 0 aliases\n`, 'a JSON file')
})

t.test('a route without a permission fails the check (strict), naming the route', async (t) => {
  const file = write('lenient.yaml', `${HEAD}    routes:
      - { method: GET, path: /users, permission: users:list }
      - { method: GET, path: /reports/*, permission: null }
`)
  const run = await portier(['config', 'check', file])
  t.equal(run.code, 78, 'exit 78 (EX_CONFIG)')
  t.equal(run.stdout, '', 'nothing on stdout')
  t.equal(run.stderr, `Invalid configuration (${file}):\n  - ${file}: upstreams[0].routes[1].permission: GET /reports/* declares no permission, so the gateway denies it to every caller\n`)
})

t.test('an alias collision fails the check', async (t) => {
  const file = write('aliases.yaml', `${HEAD}    aliases: { /utilisateurs: /users }
    routes:
      - { method: GET, path: /users, permission: users:list }
  - name: other
    target: http://127.0.0.1:4100
    aliases: { /utilisateurs: /people }
    routes:
      - { method: GET, path: /people, permission: people:list }
`)
  const run = await portier(['config', 'check', file])
  t.equal(run.code, 78)
  t.equal(run.stdout, '')
  t.match(run.stderr, `  - ${file}: upstreams[1].aliases./utilisateurs: collides with the alias declared at upstreams[0].aliases./utilisateurs\n`)
})

t.test('routes whose upstream path is or could be under /admin or /internal fail the check, each named', async (t) => {
  const file = write('reserved-upstream.yaml', `${HEAD}    routes:
      - { method: GET, path: /users, permission: users:list }
  - name: keys
    target: http://127.0.0.1:3002
    prefix: /keys
    routes:
      - { method: GET, path: /Admin/keys, permission: keys:list }
      - { method: GET, path: /*, permission: keys:read }
  - name: verify
    target: http://127.0.0.1:3002/INTERNAL/
    prefix: /verify
    routes:
      - { method: POST, path: /, permission: keys:verify }
`)
  const run = await portier(['config', 'check', file])
  t.equal(run.code, 78, 'exit 78 (EX_CONFIG)')
  t.equal(run.stdout, '', 'nothing on stdout')
  t.equal(run.stderr, [
    `Invalid configuration (${file}):`,
    `  - ${file}: upstreams[1].routes[0].path: GET /keys/Admin/keys is sent upstream as /Admin/keys, under /admin, which the gateway never sends upstream`,
    `  - ${file}: upstreams[1].routes[1].path: GET /keys/* is sent upstream as /*, whose first segment * could be admin or internal ` +
      '(which the gateway never sends upstream): start the route with a static segment, or give the target a base path',
    `  - ${file}: upstreams[2].target: its base path /INTERNAL is under /internal, which the gateway never sends upstream`,
    ''
  ].join('\n'))
})

t.test('every problem is listed at once', async (t) => {
  const file = write('many.yaml', `${HEAD}    keyCase: kebab
    routes:
      - { method: get, path: /users/, permission: users:list }
`)
  const run = await portier(['config', 'check', file])
  t.equal(run.code, 78)
  t.equal(run.stderr.split('\n').filter((line) => line.startsWith(`  - ${file}: `)).length, 3, 'three problems', { stderr: run.stderr })
})

t.test('a YAML syntax error gives the line', async (t) => {
  const file = write('broken.yaml', `${HEAD}    routes:\n      - { method: GET, path: /users\n`)
  const run = await portier(['config', 'check', file])
  t.equal(run.code, 78)
  t.match(run.stderr, new RegExp(`  - ${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: line \\d+, column \\d+: `))
})

t.test('a missing file is a configuration error (78) that says so', async (t) => {
  const missing = join(dir, 'nope.yaml')
  const run = await portier(['config', 'check', missing])
  t.equal(run.code, 78)
  t.equal(run.stdout, '')
  t.equal(run.stderr, `Invalid configuration (${missing}):\n  - ${missing}: cannot be read: no such file\n`)
})

t.test('an unknown extension is refused, naming the allowed ones', async (t) => {
  const file = write('gateway.toml', 'x = 1\n')
  const run = await portier(['config', 'check', file])
  t.equal(run.code, 78)
  t.match(run.stderr, `${file}: unknown file type: the upstreams file must end in .yaml, .yml, .json`)
})

t.test('the file argument is required', async (t) => {
  const run = await portier(['config', 'check'])
  t.equal(run.code, 2, 'a usage error')
  t.match(run.stderr, /missing required argument 'file'/)
})
