import t from 'tap'
import { assertStatus } from '../helpers/assert.js'
import { http } from '../helpers/http.js'
import { startOtlpReceiver } from '../helpers/otlp-receiver.js'
import { ADA, postLogin, postRefresh, postVerifyKey, startWithUser } from '../helpers/session-setup.js'

/**
 * Identity's spans: login, refresh and key verification, each joining the trace of
 * the traceparent that came with it, holding no secret; other routes make none.
 */

const TRACE_ID = '0af7651916cd43dd8448eb211c80319c'
const PARENT = 'b7ad6b7169203331'
const TRACEPARENT = `00-${TRACE_ID}-${PARENT}-01`

t.test('login, refresh and key verification join the caller\'s trace', async (t) => {
  const receiver = await startOtlpReceiver(t)
  const s = await startWithUser(t, { env: { OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_BSP_SCHEDULE_DELAY: '10', OTEL_SERVICE_NAME: 'id' } })
  const headers = { traceparent: TRACEPARENT }
  const login = await postLogin(s, ADA, headers)
  assertStatus(t, login, 201, 'logged in')
  const refreshed = await postRefresh(s, login.body.access_token as string, login.body.refresh_token as string, '/tokens', headers)
  assertStatus(t, refreshed, 200, 'refreshed')
  const created = await s.admin('POST', '/admin/keys', { name: 'k', permissions: ['users:list'], expires_at: new Date(s.clock.now() + 86_400_000).toISOString() })
  assertStatus(t, created, 201, 'key created')
  const key = created.body.key as string
  assertStatus(t, await http(`${s.adminUrl}/internal/keys/verify`, { bearer: s.serviceToken, body: { key }, headers }), 200, 'key verified')
  assertStatus(t, await postVerifyKey(s, key), 200, 'verified again, without a traceparent')
  assertStatus(t, await http(`${s.publicUrl}/.well-known/jwks.json`, { headers }), 200, 'an untraced route')

  const spans = await receiver.waitFor('id', 4)
  t.same(spans.map((span) => span.name).sort(), ['identity.login', 'identity.refresh', 'identity.verify_key', 'identity.verify_key'], 'one span per traced request, none for the others')
  const joined = spans.filter((span) => span.traceId === TRACE_ID)
  t.equal(joined.length, 3, 'the three with a traceparent are in its trace')
  t.ok(joined.every((span) => span.parentSpanId === PARENT && span.kind === 2), 'SERVER spans, children of the caller\'s span')
  t.match(joined.find((span) => span.name === 'identity.login')?.attributes, { 'http.route': '/sessions', 'http.request.method': 'POST', 'http.response.status_code': 201 }, 'route, method and status')
  const fresh = spans.find((span) => span.traceId !== TRACE_ID)
  t.equal(fresh?.parentSpanId, '', 'without one: a trace of its own')

  const secrets = [ADA.password, key, s.serviceToken, s.adminToken, login.body.access_token, login.body.refresh_token, refreshed.body.refresh_token] as string[]
  for (const span of spans) {
    for (const [name, value] of Object.entries(span.attributes)) {
      for (const secret of secrets) t.notOk(String(value).includes(secret), `${span.name} ${name} holds no secret`)
    }
  }
})
