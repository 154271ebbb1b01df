import t from 'tap'
import { assertJson, assertProblem, assertStatus } from '../helpers/assert.js'
import { startStack } from '../helpers/gateway.js'
import { http, type HttpAnswer } from '../helpers/http.js'

/**
 * What ops read: /healthz (the process answers), /readyz (ready, or degraded with the
 * failing dependency named, when Redis goes away and comes back) on the main listener,
 * and /metrics (Prometheus text with the gateway's request, auth, key-cache and
 * upstream series) on the private metrics listener only.
 */

/** Prometheus' own scrape Accept header: the gateway must serve it. */
const PROMETHEUS_ACCEPT = 'application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,' +
  'text/plain;version=0.0.4;q=0.5,*/*;q=0.1'

async function pollUntil (read: () => Promise<HttpAnswer>, done: (answer: HttpAnswer) => boolean, timeoutMs: number): Promise<HttpAnswer> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const answer = await read()
    if (done(answer) || Date.now() > deadline) return answer
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

t.test('health, readiness and metrics', async (t) => {
  const s = await startStack(t)
  const { gateway } = s

  t.test('/healthz', async (t) => {
    const answer = await gateway.call('/healthz')
    assertJson(t, answer, 200, 'GET /healthz')
    t.same(answer.body, { status: 'ok' }, 'the process answers')
  })

  t.test('/readyz: ready, then degraded while Redis is down, then ready again', async (t) => {
    const ready = await gateway.call('/readyz')
    assertJson(t, ready, 200, 'GET /readyz')
    t.match(ready.body, {
      status: 'ready',
      checks: { config: { routes: Number, upstreams: 2 }, redis: 'up', identity: 'up', jwks: 'loaded' }
    }, 'ready, with every check')
    t.ok(ready.body.checks.config.routes >= 24, 'every route of the shipped file (and identity\'s) is loaded')
    t.equal(ready.headers['cache-control'], 'no-store', 'readiness is never cached')

    await s.redis.stop()
    let redisDown = true
    // Only if an assertion below threw: a second start would orphan the first redis-server.
    t.teardown(async () => { if (redisDown) await s.redis.restart() })
    const down = await pollUntil(async () => await gateway.call('/readyz'), (a) => a.body?.checks?.redis === 'down', 5_000)
    assertJson(t, down, 200, 'GET /readyz with Redis down: still 200 (degraded modes serve)')
    t.match(down.body, { status: 'degraded', checks: { redis: 'down', jwks: 'loaded' } }, 'degraded, naming redis')

    await s.redis.restart()
    redisDown = false
    const back = await pollUntil(async () => await gateway.call('/readyz'), (a) => a.body?.status === 'ready', 10_000)
    assertJson(t, back, 200, 'GET /readyz after Redis is back')
    t.match(back.body, { status: 'ready', checks: { redis: 'up' } }, 'ready again')
  })

  t.test('/metrics: Prometheus text with the gateway\'s series', async (t) => {
    const key = await s.createKey(['users:list'])
    assertJson(t, await gateway.call('/users?per_page=1', { headers: { 'x-api-key': key.key } }), 200, 'a keyed request')
    assertJson(t, await gateway.call('/users?per_page=1', { headers: { 'x-api-key': key.key } }), 200, 'the same key again (an L1 hit)')
    assertStatus(t, await gateway.call('/nowhere'), 404, 'an unmatched request')
    const reader = await s.createKey(['tasks:list'])
    assertStatus(t, await gateway.call('/users?per_page=1'), 401, 'no credential on a known route')
    assertStatus(t, await gateway.call('/users?per_page=1', { headers: { 'x-api-key': 'ptk_not_a_key' } }), 401, 'a malformed key on it')
    assertStatus(t, await gateway.call('/users?per_page=1', { headers: { 'x-api-key': reader.key } }), 403, 'a key without the permission')
    assertStatus(t, await gateway.call('/users?per_page=1', { headers: { 'x-api-key': reader.key } }), 403, 'again, from L1')

    const metrics = await http(`${gateway.metricsUrl}/metrics`, { headers: { accept: PROMETHEUS_ACCEPT } })
    assertStatus(t, metrics, 200, 'GET /metrics on the metrics listener, with Prometheus\' Accept')
    t.match(metrics.headers['content-type'], /^text\/plain; version=0\.0\.4/, 'Prometheus text format')
    const text = metrics.text
    t.match(text, /^portier_gateway_requests_total\{[^}]*route="\/users"[^}]*status="200"[^}]*\} 2$/m, 'requests by route pattern from config')
    t.match(text, /^portier_gateway_requests_total\{[^}]*route="unmatched"[^}]*status="404"[^}]*\} \d+$/m, 'unmatched requests in one series')
    t.match(text, /^portier_gateway_requests_total\{[^}]*route="\/users"[^}]*status="401"[^}]*\} 2$/m, 'refused credentials counted under the route they were for')
    t.match(text, /^portier_gateway_requests_total\{[^}]*route="\/users"[^}]*status="403"[^}]*\} 2$/m, 'and refused permissions')
    t.notMatch(text, /route="unmatched"[^}]*status="40[13]"/, 'never as unmatched')
    t.notMatch(text, /route="\/nowhere"/, 'never a raw path as a label')
    t.match(text, /^portier_gateway_auth_outcomes_total\{credential="api_key",outcome="valid"\} 4$/m, 'auth outcomes: two keyed requests, two refused for their permission')
    t.match(text, /^portier_gateway_auth_outcomes_total\{credential="none",outcome="missing"\} 1$/m, 'a request without a credential')
    t.match(text, /^portier_gateway_auth_outcomes_total\{credential="api_key",outcome="malformed"\} 1$/m, 'a malformed key')
    t.match(text, /^portier_gateway_key_cache_total\{tier="l1",result="hit"\} \d+$/m, 'key cache by tier: an L1 hit')
    t.match(text, /^portier_gateway_key_cache_total\{tier="l1",result="miss"\} \d+$/m, 'and the first L1 miss')
    t.match(text, /^portier_gateway_upstream_duration_seconds_bucket\{[^}]*upstream="backoffice"[^}]*\} \d+$/m, 'upstream latency histogram')
    t.match(text, /^portier_gateway_request_duration_seconds_count\{route="\/users",method="GET",status_class="2xx"\} 2$/m, 'whole-answer durations by route pattern and status class')
    t.match(text, /^portier_gateway_request_duration_seconds_count\{route="\/users",method="GET",status_class="4xx"\} 4$/m, 'refusals timed too, in one class')
    t.match(text, /^portier_gateway_request_duration_seconds_bucket\{le="\+Inf",route="unmatched",method="GET",status_class="4xx"\} 1$/m, 'unmatched requests timed in one series')
    t.match(text, /^process_cpu_seconds_total \d/m, 'process metrics under their standard names')
    t.match(text, /^nodejs_eventloop_lag_seconds \d/m, 'and Node.js metrics')
    t.notMatch(text, /^portier_gateway_(process|nodejs)_/m, 'never prefixed')
    t.match(text, /^portier_build_info\{version="\d+\.\d+\.\d+[^"]*",node_version="v\d+\.\d+\.\d+",service="gateway"\} 1$/m, 'the build info')
    t.notOk(text.includes(key.key) || text.includes(key.id), 'no key material in the metrics')

    // /metrics is the one route that is not JSON: it opts out of the JSON-only Accept check.
    assertStatus(t, await http(`${gateway.metricsUrl}/metrics`, { headers: { accept: 'text/plain' } }), 200, 'a plain text/plain Accept is served too')
    t.equal(metrics.headers['cache-control'], 'no-store', 'never cached')
    assertProblem(t, await gateway.call('/metrics', { headers: { accept: PROMETHEUS_ACCEPT } }), 404, 'not_found', 'not on the main listener')
  })
})
