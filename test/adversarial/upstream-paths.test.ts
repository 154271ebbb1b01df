import t from 'tap'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { assertJson, assertProblem } from '../helpers/assert.js'
import { mockUpstreamsContent } from '../helpers/upstreams-file.js'
import { pollUntil } from '../helpers/gateway-auth.js'
import { tempDir } from '../helpers/temp.js'
import { watchForLeaks } from '../helpers/leak-watch.js'
import { exitBeforeListening, LISTENING, startProcess } from '../helpers/process.js'
import { startProcessStack } from '../helpers/process-stack.js'
import { freePort } from '../helpers/redis.js'

/**
 * An upstreams file must not be a way into identity's admin or internal API: no route
 * or alias may send an upstream a path under /admin or /internal, in any letter case,
 * once the prefix is taken off and the target's base path put on, nor through a
 * parameter or wildcard in the first upstream segment. Such a file stops a gateway
 * process at start (exit 78, naming the place) and is refused on reload (SIGHUP), the
 * previous routes staying in force. Identity's admin listener itself is the upstream
 * here: the rule holds whatever host the target names. Real processes from dist/.
 */

const leaks = watchForLeaks()
// Generous for a loaded machine: a gateway that starts anyway ends the wait when it listens.
const START_WAIT_MS = 60_000

t.test('upstream paths under /admin or /internal', async (t) => {
  const s = await startProcessStack(t, { leaks, gateways: 0 })
  const dir = tempDir(t, 'portier-upstream-paths-')
  const [mocked] = mockUpstreamsContent(s.mock.url).upstreams
  // No alias: the catch-all below would sit behind it.
  const backoffice = { ...mocked, aliases: {} }
  const admin = s.identity.adminUrl
  const route = (path: string, method = 'GET'): object => ({ method, path, permission: 'debug:read' })
  const fileWith = (name: string, ...extra: object[]): string => {
    const file = join(dir, name)
    writeFileSync(file, JSON.stringify({ upstreams: [backoffice, ...extra] }))
    return file
  }

  const refused: Array<[string, object, string]> = [
    ['the prefix taken off leaves /admin', { name: 'keys', target: admin, prefix: '/keys', routes: [route('/admin/keys')] },
      'upstreams[1].routes[0].path: GET /keys/admin/keys is sent upstream as /admin/keys, under /admin'],
    ['a wildcard after the prefix', { name: 'svc', target: admin, prefix: '/svc', routes: [route('/*')] },
      'upstreams[1].routes[0].path: GET /svc/* is sent upstream as /*, whose first segment * could be admin or internal'],
    ['a parameter after the prefix', { name: 'svc', target: admin, prefix: '/svc', routes: [route('/:area/verify', 'POST')] },
      'upstreams[1].routes[0].path: POST /svc/:area/verify is sent upstream as /:area/verify, whose first segment :area could be admin or internal'],
    ['a base path /Internal', { name: 'verify', target: `${admin}/Internal/keys`, prefix: '/verify', routes: [route('/', 'POST')] },
      'upstreams[1].target: its base path /Internal/keys is under /internal'],
    ['an alias to a path sent under /ADMIN', { name: 'gestion', target: admin, prefix: '/g', routes: [route('/:area/users')], aliases: { '/old': '/g/ADMIN' } },
      'upstreams[1].aliases./old: its target /g/ADMIN is sent upstream as /ADMIN, under /admin']
  ]

  await t.test('such a file stops the gateway at start, naming the place', async (t) => {
    const runs = await Promise.all(refused.map(async ([label, upstream, problem], i) => {
      const file = fileWith(`start-${i}.json`, upstream)
      const gateway = startProcess(t, 'dist/gateway/server.js', { ...s.env.gateway, GATEWAY_PORT: String(await freePort()), GATEWAY_METRICS_PORT: '0', GATEWAY_UPSTREAMS_FILE: file }, LISTENING)
      // A gateway that starts anyway is the failure: it would never exit on its own.
      const exit = await exitBeforeListening(gateway, START_WAIT_MS)
      return { label, file, problem, gateway, exit }
    }))
    for (const { label, file, problem, gateway, exit } of runs) {
      t.equal(exit.code, 78, `${label}: exit 78 (EX_CONFIG)`)
      t.match(gateway.stderr(), `${file}: ${problem}`, `${label}: the problem names the file and the place`)
    }
  })

  await t.test('a reload to such a file is refused; the routes in force stay', async (t) => {
    const file = fileWith('running.json', { name: 'listener', target: admin, prefix: '/', routes: [route('/*')] })
    const gateway = await s.addGateway({ GATEWAY_UPSTREAMS_FILE: file })
    const key = await s.createKey(['users:list', 'debug:read'])
    const get = async (path: string): Promise<Awaited<ReturnType<typeof s.call>>> => await s.call(path, { headers: { 'x-api-key': key.key } }, gateway)
    assertJson(t, await get('/users?per_page=1'), 200, 'before: the mock answers')
    // A catch-all on identity's admin listener, sent as is: the gateway never routes the reserved paths themselves.
    for (const path of ['/admin/keys', '/ADMIN/keys', '/Admin/users', '/internal/sessions/revoked', '/InTeRnAl/keys/verify', '/%61dmin/keys']) {
      assertProblem(t, await get(path), 404, 'not_found', `GET ${path} through the catch-all`)
    }

    // Without the catch-all, so that what the refused files would add is plainly absent.
    writeFileSync(file, JSON.stringify({ upstreams: [backoffice] }))
    let logged = gateway.output().length
    gateway.child().kill('SIGHUP')
    t.not(await pollUntil(async () => gateway.output().slice(logged).includes('upstreams reloaded'), { timeoutMs: 5_000, intervalMs: 20 }), null,
      'a valid file is reloaded (the catch-all is gone)')
    for (const [label, upstream] of refused) {
      writeFileSync(file, JSON.stringify({ upstreams: [backoffice, upstream] }))
      logged = gateway.output().length
      gateway.child().kill('SIGHUP')
      const rejected = await pollUntil(async () => gateway.output().slice(logged).includes('upstreams reload rejected'), { timeoutMs: 5_000, intervalMs: 20 })
      t.not(rejected, null, `${label}: the reload is rejected and logged`)
      t.match(gateway.output().slice(logged), file, `${label}: the log names the file`)
      assertJson(t, await get('/users?per_page=1'), 200, `${label}: the routes in force still answer`)
      for (const path of ['/keys/admin/keys', '/svc/admin/keys', '/svc/ADMIN/keys', '/verify', '/g/ADMIN/users', '/old/users']) {
        assertProblem(t, await get(path), 404, 'not_found', `${label}: GET ${path} is not routed`)
      }
    }
    t.equal(gateway.running(), true, 'the same gateway process throughout')
  })

  await leaks.assertNoLeaks(t)
})
