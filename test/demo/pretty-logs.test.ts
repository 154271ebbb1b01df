import t from 'tap'
import { DEMO_STARTED, demoEnvironment } from '../helpers/demo.js'
import { http } from '../helpers/http.js'
import { startProcess } from '../helpers/process.js'

/**
 * npm start writes readable lines, not JSON, unless LOG_FORMAT says otherwise: a
 * person watching the terminal reads each request as one sentence, and the banner's
 * one-time secrets are not buried under JSON.
 */

t.test('npm start: readable log lines by default, an access line as one sentence', async (t) => {
  const setup = await demoEnvironment(t)
  const { LOG_FORMAT: _json, ...env } = setup.env
  const demo = startProcess(t, 'dist/demo/start.js', env, DEMO_STARTED)
  t.ok(await demo.ready, 'npm start prints its banner', { stderr: demo.stderr().slice(-2000) })

  const answer = await http(`${setup.gateway}/users/7`)
  t.equal(answer.status, 401, 'a request without a credential')
  const requestId = answer.headers['x-request-id'] as string
  let line: string | undefined
  for (let i = 0; i < 100 && line === undefined; i++) {
    line = demo.stdout().split('\n').find((l) => l.includes(requestId))
    if (line === undefined) await new Promise((resolve) => setTimeout(resolve, 50))
  }
  t.ok(line, 'its access line is printed')
  t.throws(() => JSON.parse(line ?? '{}'), 'the line is not JSON')
  t.match(line, /INFO \(gateway\): GET \/users\/7 401 [\d.]+ ms · backoffice \/users\/:id · anonymous · 0 B in, \d+ B out · req /,
    'method, path, status, time, route, who and bytes, in a sentence')
  t.notOk(demo.stdout().split('\n').some((l) => l.startsWith('{')), 'no JSON line anywhere')
  t.match(demo.stdout(), /Server listening at/, 'the services\' own lines are readable too')
  demo.child.kill('SIGINT')
  await demo.exited
})
