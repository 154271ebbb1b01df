import t from 'tap'
import { startConsole } from '../helpers/console.js'
import { http } from '../helpers/http.js'

/**
 * The console's liveness route, which the container health checks and the Kubernetes
 * probes ask on its own port: 200 JSON without a session, and without identity (a
 * console whose identity is away is alive; its pages say identity is unavailable).
 */
t.test('GET /healthz: 200 JSON, no session, no identity needed', async (t) => {
  // Nothing listens on port 9 (discard): identity is away.
  const console = await startConsole(t, { identityPublicUrl: 'http://127.0.0.1:9', identityAdminUrl: 'http://127.0.0.1:9' })
  const answer = await http(`${console.url}/healthz`)
  t.equal(answer.status, 200, 'alive')
  t.match(answer.headers['content-type'], /^application\/json/, 'JSON')
  t.same(answer.body, { status: 'ok' }, '{"status":"ok"}')
  t.notOk('set-cookie' in answer.headers, 'no session cookie is made for it')
  t.not(answer.headers['cache-control'], 'no-store', 'not a page: the pages\' no-store rule is for HTML')

  const page = await http(`${console.url}/console/sign-in`, { headers: { accept: 'text/html' } })
  t.equal(page.status, 200, 'while the pages are served as ever')
})
