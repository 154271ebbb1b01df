import t from 'tap'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { ConfigError } from '../../common/config.js'
import { assertJson, assertProblem, assertStatus } from '../helpers/assert.js'
import { startGateway, startStack, type TestGateway } from '../helpers/gateway.js'
import { tempDir } from '../helpers/temp.js'

/**
 * A gateway started from an upstreams file: reload() (what SIGHUP calls) and the file
 * watch apply a changed file, an invalid one is rejected with a log line naming the
 * problem while the old routes keep working, in-flight requests survive a reload,
 * and an invalid file at start fails with the file and the place inside it.
 */
type Route = readonly [method: string, path: string, permission: string]

const USERS: Route = ['GET', '/users', 'users:list']
const TASKS: Route = ['GET', '/tasks', 'tasks:list']
const SLOW: Route = ['GET', '/slow', 'debug:read']

function upstreamsYaml (target: string, routes: readonly Route[]): string {
  return [
    'upstreams:',
    '  - name: backoffice',
    `    target: ${target}`,
    '    routes:',
    ...routes.map(([method, path, permission]) => `      - { method: ${method}, path: ${path}, permission: "${permission}" }`),
    ''
  ].join('\n')
}

async function waitFor (check: () => Promise<boolean>, timeoutMs: number): Promise<number> {
  const startedAt = Date.now()
  while (!(await check())) {
    if (Date.now() - startedAt > timeoutMs) break
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  return Date.now() - startedAt
}

t.test('reloading the upstreams file', async (t) => {
  const s = await startStack(t)
  const key = await s.createKey(['users:list', 'tasks:list', 'debug:read'])
  const withKey = { headers: { 'x-api-key': key.key } }
  const fileGateway = async (file: string, options: { watchUpstreamsFile?: boolean } = {}): Promise<TestGateway> =>
    await startGateway(t, { ...s.gatewaySetup, upstreams: file, options })

  t.test('reload() applies a rewritten file: a new route appears', async (t) => {
    const file = join(tempDir(t), 'upstreams.yaml')
    writeFileSync(file, upstreamsYaml(s.upstreamUrl, [USERS]))
    const gateway = await fileGateway(file)
    assertJson(t, await gateway.call('/users?per_page=1', withKey), 200, 'GET /users from the file')
    assertProblem(t, await gateway.call('/tasks', withKey), 404, 'not_found', 'GET /tasks before the reload')

    writeFileSync(file, upstreamsYaml(s.upstreamUrl, [USERS, TASKS]))
    assertProblem(t, await gateway.call('/tasks', withKey), 404, 'not_found', 'the file alone changes nothing without a watch')
    t.equal(gateway.app.portierGateway.reload(), true, 'reload() accepts the new file')
    assertJson(t, await gateway.call('/tasks?per_page=1', withKey), 200, 'GET /tasks after the reload')
    assertJson(t, await gateway.call('/users?per_page=1', withKey), 200, 'GET /users still served')
    t.ok(gateway.logs.some((line) => line.msg === 'upstreams reloaded'), 'the reload is logged')
  })

  t.test('with watchUpstreamsFile, a file change alone is applied within about 2 s', async (t) => {
    const file = join(tempDir(t), 'upstreams.yaml')
    writeFileSync(file, upstreamsYaml(s.upstreamUrl, [USERS]))
    const gateway = await fileGateway(file, { watchUpstreamsFile: true })
    assertProblem(t, await gateway.call('/tasks', withKey), 404, 'not_found', 'GET /tasks before the change')
    writeFileSync(file, upstreamsYaml(s.upstreamUrl, [USERS, TASKS]))
    let status = 0
    const waitedMs = await waitFor(async () => (status = (await gateway.call('/tasks?per_page=1', withKey)).status) === 200, 2_500)
    t.equal(status, 200, `GET /tasks answered 200 after ${waitedMs} ms`)
    t.ok(waitedMs <= 2_500, 'within about 2 s')

    writeFileSync(file, 'upstreams: [')
    const rejectedAfterMs = await waitFor(async () => gateway.logs.some((line) => String(line.msg).startsWith('upstreams reload rejected')), 2_500)
    t.ok(rejectedAfterMs <= 2_500, 'a broken save is rejected too')
    assertJson(t, await gateway.call('/tasks?per_page=1', withKey), 200, 'and the routes in force stay')
  })

  t.test('an invalid file is rejected by reload(): logged, the old routes stay', async (t) => {
    const file = join(tempDir(t), 'upstreams.yaml')
    writeFileSync(file, upstreamsYaml(s.upstreamUrl, [USERS]))
    const gateway = await fileGateway(file)
    writeFileSync(file, upstreamsYaml(s.upstreamUrl, [USERS, ['GET', 'tasks', 'tasks:list']]))
    t.equal(gateway.app.portierGateway.reload(), false, 'reload() refuses the file')
    const rejected = gateway.logs.find((line) => String(line.msg).startsWith('upstreams reload rejected'))
    t.ok(rejected !== undefined, 'a log line says the reload was rejected')
    const problems = (rejected?.problems ?? []) as string[]
    t.ok(problems.some((p) => p.includes(file) && p.includes('upstreams[0].routes[1].path')), 'it names the file and the place inside it',
      { problems })
    assertJson(t, await gateway.call('/users?per_page=1', withKey), 200, 'GET /users still served')
    assertProblem(t, await gateway.call('/tasks', withKey), 404, 'not_found', 'nothing of the bad file applied')

    writeFileSync(file, upstreamsYaml(s.upstreamUrl, [USERS, TASKS]))
    t.equal(gateway.app.portierGateway.reload(), true, 'a fixed file is accepted afterwards')
    assertJson(t, await gateway.call('/tasks?per_page=1', withKey), 200, 'and applied')
  })

  t.test('in-flight requests are not dropped by a reload', async (t) => {
    const file = join(tempDir(t), 'upstreams.yaml')
    writeFileSync(file, upstreamsYaml(s.upstreamUrl, [USERS, SLOW]))
    const gateway = await fileGateway(file)
    const slow = gateway.call('/slow?delay_ms=1500', withKey)
    await new Promise((resolve) => setTimeout(resolve, 300))
    // The new config drops the very route the slow request is on.
    writeFileSync(file, upstreamsYaml(s.upstreamUrl, [USERS, TASKS]))
    t.equal(gateway.app.portierGateway.reload(), true, 'reloaded while the request is in flight')
    assertProblem(t, await gateway.call('/slow?delay_ms=0', withKey), 404, 'not_found', 'a new request sees the new config')
    const answer = await slow
    assertJson(t, answer, 200, 'the in-flight request completes')
    t.same(answer.body, { waited_ms: 1500 }, 'with the upstream\'s answer')
  })

  // With Redis configured, as here: a start that fails must not leave a Redis client reconnecting
  // forever (this file would then never end and tap would time it out).
  t.test('an invalid file at start: a ConfigError naming the file and the place inside it', async (t) => {
    const file = join(tempDir(t), 'broken.yaml')
    writeFileSync(file, upstreamsYaml(s.upstreamUrl, [USERS, ['GET', '/tasks', 'not a permission']]))
    const error = await fileGateway(file).then(() => null, (err: unknown) => err)
    t.ok(error instanceof ConfigError, 'startGateway rejects with a ConfigError')
    const message = error instanceof Error ? error.message : ''
    t.ok(message.includes(file), 'the message names the file', { message })
    t.ok(message.includes('upstreams[0].routes[1].permission'), 'and the place inside it', { message })

    const missing = join(tempDir(t), 'missing.yaml')
    const notThere = await fileGateway(missing).then(() => null, (err: unknown) => err)
    t.ok(notThere instanceof ConfigError && notThere.message.includes(missing), 'a missing file is a ConfigError naming it')
    // The stack keeps serving: a failed start leaves nothing behind that breaks the others.
    assertStatus(t, await s.gateway.call('/users?per_page=1', withKey), 200, 'the stack\'s gateway still answers')
  })
})
