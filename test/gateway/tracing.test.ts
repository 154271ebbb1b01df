import t, { type Test } from 'tap'
import { createServer, type IncomingHttpHeaders } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { TracingConfig } from '../../common/tracing/config.js'
import { loadGatewayConfig } from '../../gateway/config.js'
import { assertStatus } from '../helpers/assert.js'
import { startGateway, type TestGateway } from '../helpers/gateway.js'
import type { Teardown } from '../helpers/temp.js'
import { SPAN_KIND, startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../helpers/otlp-receiver.js'
import { ADA, startWithUser, type UserSetup } from '../helpers/session-setup.js'

/**
 * Tracing over real sockets: an identity and a gateway exporting to an in-process
 * OTLP/HTTP receiver, in front of an upstream that records the trace headers it got.
 */

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736'
const CLIENT_PARENT = '00f067aa0ba902b7'
const TRACESTATE = 'vendor=opaque'
const traceparent = (flags = '01'): string => `00-${TRACE_ID}-${CLIENT_PARENT}-${flags}`

/** The gateway's tracing as the server reads it: through its config schema, from the OTEL_* variables. */
function tracingOf (env: Record<string, string>): TracingConfig {
  const config = loadGatewayConfig({ IDENTITY_SERVICE_TOKEN: 's'.repeat(40), OTEL_TRACES_EXPORTER: 'otlp', OTEL_BSP_SCHEDULE_DELAY: '10', ...env }).tracing
  if (config == null) throw new Error('tracing is off')
  return config
}

interface RecordingUpstream { url: string, received: IncomingHttpHeaders[] }

/** An upstream that answers every request with a small JSON body and keeps the headers it came with. */
async function startUpstream (t: Teardown): Promise<RecordingUpstream> {
  const received: IncomingHttpHeaders[] = []
  const server = createServer((request, response) => {
    received.push(request.headers)
    request.resume().on('end', () => response.writeHead(200, { 'content-type': 'application/json' }).end('{"users":[]}'))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(async () => { server.closeAllConnections(); await new Promise((resolve) => server.close(resolve)) })
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, received }
}

interface System {
  s: UserSetup
  receiver: OtlpReceiver
  upstream: RecordingUpstream
  gateway: (tracing?: TracingConfig) => Promise<TestGateway>
  key: { id: string, key: string }
}

async function startSystem (t: Test): Promise<System> {
  const receiver = await startOtlpReceiver(t)
  const s = await startWithUser(t, {
    env: { OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_BSP_SCHEDULE_DELAY: '10' }
  })
  s.clock.advance(Date.now() - s.clock.now())
  const upstream = await startUpstream(t)
  const created = await s.admin('POST', '/admin/keys', { name: 'traced', permissions: ['users:list'], expires_at: new Date(Date.now() + 86_400_000).toISOString() })
  assertStatus(t, created, 201, 'API key created')
  return {
    s,
    receiver,
    upstream,
    key: { id: created.body.api_key.id as string, key: created.body.key as string },
    gateway: async (tracing) => await startGateway(t, {
      identity: s,
      clock: s.clock,
      upstreams: { upstreams: [{ name: 'backoffice', target: upstream.url, routes: [{ method: 'GET', path: '/users', permission: 'users:list' }] }] },
      tracing
    })
  }
}

const only = (spans: ReceivedSpan[], name: string): ReceivedSpan[] => spans.filter((span) => span.name === name)
const one = (spans: ReceivedSpan[], predicate: (span: ReceivedSpan) => boolean, what: string): ReceivedSpan => {
  const found = spans.filter(predicate)
  if (found.length !== 1) throw new Error(`${found.length} spans ${what}`)
  return found[0] as ReceivedSpan
}

/** The access line of the request `requestId` (written once its answer is over). */
async function accessLine (gateway: TestGateway, requestId: string): Promise<Record<string, unknown>> {
  for (let i = 0; i < 1_000; i++) {
    const line = gateway.logs.find((l) => l.msg === 'request' && l.request_id === requestId)
    if (line !== undefined) return line
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
  throw new Error(`no access line for ${requestId}`)
}

t.test('a traced API key request: the span tree, what the upstream and identity were told, and no secret anywhere', async (t) => {
  const { s, receiver, upstream, gateway: start, key } = await startSystem(t)
  const gateway = await start(tracingOf({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_SERVICE_NAME: 'gw' }))

  const headers = { 'x-api-key': key.key, traceparent: traceparent(), tracestate: TRACESTATE }
  const first = await gateway.call('/users?token=not-a-span-attribute', { headers })
  assertStatus(t, first, 200, 'first call: a key-cache miss')
  const second = await gateway.call('/users', { headers })
  assertStatus(t, second, 200, 'second call: a hit')

  const gatewaySpans = await receiver.waitFor('gw', 8)
  const requests = only(gatewaySpans, 'portier.request')
  t.equal(requests.length, 2, 'one SERVER span per request')
  for (const [i, request] of requests.entries()) {
    t.equal(request.kind, SPAN_KIND.server, 'portier.request is a SERVER span')
    t.equal(request.traceId, TRACE_ID, 'in the client\'s trace')
    t.equal(request.parentSpanId, CLIENT_PARENT, 'a child of the client\'s span')
    t.match(request.attributes, {
      'http.route': '/users',
      'http.request.method': 'GET',
      'http.response.status_code': 200,
      'portier.upstream': 'backoffice',
      'portier.principal.type': 'api_key',
      'portier.principal.id': key.id
    }, `request ${i + 1}'s attributes`)
    const children = gatewaySpans.filter((span) => span.parentSpanId === request.spanId)
    const auth = one(children, (span) => span.name === 'portier.authenticate', 'authenticating')
    t.equal(auth.attributes['portier.cache'], i === 0 ? 'miss' : 'hit', `request ${i + 1}'s key was a cache ${i === 0 ? 'miss' : 'hit'}`)
    one(children, (span) => span.name === 'portier.traffic_control', 'of traffic control')
    const call = one(children, (span) => span.name === 'portier.upstream', 'calling the upstream')
    t.equal(call.kind, SPAN_KIND.client, 'the upstream call is a CLIENT span')
    t.equal(call.attributes['http.response.status_code'], 200, 'with the upstream\'s status')
    // Requests complete in order, so the upstream saw them in this order.
    t.equal(upstream.received[i]?.traceparent, `00-${TRACE_ID}-${call.spanId}-01`, 'the upstream\'s parent is the CLIENT span, in the client\'s trace')
    t.equal(upstream.received[i]?.tracestate, TRACESTATE, 'and the client\'s tracestate goes with it')
    t.equal((await accessLine(gateway, (i === 0 ? first : second).headers['x-request-id'] as string)).trace_id, TRACE_ID, 'the access line names the trace')
  }

  const identitySpans = await receiver.waitFor('portier-identity', 1)
  const verify = one(identitySpans, (span) => span.name === 'identity.verify_key', 'of key verification')
  const missAuth = one(gatewaySpans, (span) => span.name === 'portier.authenticate' && span.attributes['portier.cache'] === 'miss', 'of the miss')
  t.equal(verify.kind, SPAN_KIND.server, 'identity\'s check is a SERVER span')
  t.equal(verify.traceId, TRACE_ID, 'in the same trace')
  t.equal(verify.parentSpanId, missAuth.spanId, 'a child of the gateway\'s authentication span')

  const secrets = [key.key, ADA.password, s.serviceToken, 'not-a-span-attribute']
  for (const span of receiver.spans) {
    for (const [name, value] of Object.entries(span.attributes)) {
      for (const secret of secrets) t.notOk(String(value).includes(secret), `${span.name} ${name} holds no secret`)
    }
  }
})

t.test('a verify question is traced as the request it describes would be: portier.verify and its stages, no upstream call', async (t) => {
  const { s, receiver, upstream, gateway: start, key } = await startSystem(t)
  const gateway = await start(tracingOf({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_SERVICE_NAME: 'gw' }))
  const ask = async (url: string, apiKey: string) => await gateway.app.portierGateway.verify({
    method: 'GET', url, headers: { 'x-api-key': apiKey, traceparent: traceparent() }, ip: '127.0.0.1'
  })
  t.equal((await ask('/users?token=not-a-span-attribute', key.key)).allowed, true, 'the key may list users')
  const forged = `${key.key.slice(0, -4)}AAAA`
  t.equal((await ask('/users', forged)).allowed, false, 'a forged key may not')

  const spans = await receiver.waitFor('gw', 5)
  const questions = only(spans, 'portier.verify')
  t.equal(questions.length, 2, 'one SERVER span per question')
  const allowed = one(questions, (span) => span.attributes['http.response.status_code'] === 200, 'of the allowed question')
  const refused = one(questions, (span) => span.attributes['http.response.status_code'] === 401, 'of the refused question')
  for (const span of questions) {
    t.equal(span.kind, SPAN_KIND.server, 'portier.verify is a SERVER span')
    t.equal(span.traceId, TRACE_ID, 'in the trace of the client the proxy asks for')
    t.equal(span.parentSpanId, CLIENT_PARENT, 'a child of the client\'s span')
    t.equal(span.attributes['url.path'], '/users', 'the described path, without its query')
  }
  t.match(allowed.attributes, { 'http.route': '/users', 'http.request.method': 'GET', 'portier.principal.type': 'api_key', 'portier.principal.id': key.id }, 'the allowed question names its route and key')
  t.equal(refused.attributes['portier.principal.type'], 'anonymous', 'the forged key names no one')
  const children = spans.filter((span) => span.parentSpanId === allowed.spanId)
  t.same(children.map((span) => span.name).sort(), ['portier.authenticate', 'portier.traffic_control'], 'its stages are its children, and nothing is called upstream')
  const refusedAuth = one(spans, (span) => span.parentSpanId === refused.spanId, 'under the refused question')
  t.match(refusedAuth, { name: 'portier.authenticate', attributes: { 'error.type': 'invalid_api_key' } }, 'the refusal is the authentication span\'s')
  t.equal(upstream.received.length, 0, 'the upstream was never called')
  for (const span of receiver.spans) {
    for (const [name, value] of Object.entries(span.attributes)) {
      for (const secret of [key.key, forged, s.serviceToken, 'not-a-span-attribute']) t.notOk(String(value).includes(secret), `${span.name} ${name} holds no secret`)
    }
  }
})

t.test('login and refresh through the gateway join the client\'s trace in identity', async (t) => {
  const { s, receiver, gateway: start } = await startSystem(t)
  const gateway = await start(tracingOf({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_SERVICE_NAME: 'gw' }))
  const headers = { traceparent: traceparent() }
  const login = await gateway.call('/sessions', { headers, body: { session: ADA } })
  assertStatus(t, login, 201, 'logged in through the gateway')
  const tokens = login.body as { access_token: string, refresh_token: string }
  const refresh = await gateway.call('/tokens', { headers, bearer: tokens.access_token, body: { refresh_token: tokens.refresh_token } })
  assertStatus(t, refresh, 200, 'refreshed through the gateway')

  const identitySpans = await receiver.waitFor('portier-identity', 2)
  const gatewaySpans = await receiver.waitFor('gw', 6)
  for (const name of ['identity.login', 'identity.refresh']) {
    const span = one(identitySpans, (candidate) => candidate.name === name, name)
    t.equal(span.traceId, TRACE_ID, `${name} is in the client's trace`)
    const parent = one(gatewaySpans, (candidate) => candidate.spanId === span.parentSpanId, `parent of ${name}`)
    t.equal(parent.name, 'portier.upstream', `${name}'s parent is the gateway's CLIENT span`)
  }
  const secrets = [ADA.password, tokens.access_token, tokens.refresh_token, (refresh.body as { refresh_token: string }).refresh_token, s.serviceToken]
  for (const span of receiver.spans) {
    for (const [name, value] of Object.entries(span.attributes)) {
      for (const secret of secrets) t.notOk(String(value).includes(secret), `${span.name} ${name} holds no secret`)
    }
  }
})

t.test('without a traceparent the request starts a trace, and the access line names it', async (t) => {
  const { receiver, upstream, gateway: start, key } = await startSystem(t)
  const gateway = await start(tracingOf({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_SERVICE_NAME: 'gw' }))
  const answer = await gateway.call('/users', { headers: { 'x-api-key': key.key } })
  assertStatus(t, answer, 200, 'answered')
  const [request] = only(await receiver.waitFor('gw', 4), 'portier.request')
  t.equal(request?.parentSpanId, '', 'a root span')
  t.equal((await accessLine(gateway, answer.headers['x-request-id'] as string)).trace_id, request?.traceId, 'the access line names the new trace')
  t.match(upstream.received[0]?.traceparent, new RegExp(`^00-${request?.traceId ?? ''}-[0-9a-f]{16}-01$`), 'the upstream is in it too')
})

t.test('sampling: a ratio of 0 exports nothing of a new trace, and a sampled caller is followed', async (t) => {
  const { receiver, upstream, gateway: start, key } = await startSystem(t)
  const gateway = await start(tracingOf({
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_SERVICE_NAME: 'sampled', OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0'
  }))
  for (let i = 0; i < 5; i++) assertStatus(t, await gateway.call('/users', { headers: { 'x-api-key': key.key } }), 200, 'answered')
  t.match(upstream.received[0]?.traceparent, /-00$/, 'the upstream is told the trace is not sampled')
  assertStatus(t, await gateway.call('/users', { headers: { 'x-api-key': key.key, traceparent: traceparent('01') } }), 200, 'a sampled caller')
  assertStatus(t, await gateway.call('/users', { headers: { 'x-api-key': key.key, traceparent: traceparent('00') } }), 200, 'an unsampled caller')
  // Closing flushes what is held: after it, the receiver has everything it will ever get.
  await gateway.app.close()
  const spans = receiver.spans.filter((span) => span.service === 'sampled')
  t.equal(spans.length, 4, 'only the sampled caller\'s request is exported (request, authentication, traffic control, upstream call)')
  t.ok(spans.every((span) => span.traceId === TRACE_ID), 'in the caller\'s trace')
  // The first request's key check went to identity with the unsampled context: identity follows it rather than start a trace.
  await new Promise((resolve) => setTimeout(resolve, 200))
  t.same(receiver.spans.filter((span) => span.service === 'portier-identity'), [], 'identity exported nothing of the unsampled key check')
})

t.test('a black-holed collector: requests are not slowed, and the spans beyond the queue are dropped and counted', async (t) => {
  const { gateway: start, key } = await startSystem(t)
  const blackHole = await startOtlpReceiver(t, 'black_hole')
  const queue = 6
  const gateway = await start(tracingOf({
    OTEL_EXPORTER_OTLP_ENDPOINT: blackHole.url, OTEL_SERVICE_NAME: 'dropping', OTEL_BSP_MAX_QUEUE_SIZE: String(queue), OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '2', OTEL_EXPORTER_OTLP_TIMEOUT: '20000'
  }))
  assertStatus(t, await gateway.call('/users', { headers: { 'x-api-key': key.key } }), 200, 'warm: the key is cached')
  const requests = 20
  const startedAt = performance.now()
  for (let i = 0; i < requests; i++) assertStatus(t, await gateway.call('/users', { headers: { 'x-api-key': key.key } }), 200, 'answered')
  const elapsedMs = performance.now() - startedAt
  t.ok(elapsedMs < 2_000, `${requests} requests in ${Math.round(elapsedMs)} ms, none waiting for the collector`)
  t.ok(blackHole.requests() > 0, 'exports were attempted')
  const metrics = await fetch(`${gateway.metricsUrl}/metrics`).then(async (response) => await response.text())
  const dropped = /portier_gateway_tracing_spans_dropped_total\{reason="queue_full"\} (\d+)/.exec(metrics)?.[1]
  // Four spans a request (request, authentication, traffic control, upstream call); the queue holds `queue` of them until the collector answers.
  t.equal(Number(dropped), (requests + 1) * 4 - queue, 'every span beyond the queue is counted as dropped')
  blackHole.release()
})

t.test('off by default: nothing exported, and the client\'s trace headers go upstream untouched', async (t) => {
  const { receiver, upstream, gateway: start, key } = await startSystem(t)
  const gateway = await start()
  const answer = await gateway.call('/users', { headers: { 'x-api-key': key.key, traceparent: traceparent(), tracestate: TRACESTATE } })
  assertStatus(t, answer, 200, 'answered')
  t.equal(upstream.received[0]?.traceparent, traceparent(), 'the client\'s traceparent, as sent')
  t.equal(upstream.received[0]?.tracestate, TRACESTATE, 'and its tracestate')
  t.equal((await accessLine(gateway, answer.headers['x-request-id'] as string)).trace_id, TRACE_ID, 'the access line names the client\'s trace')
  await gateway.app.close()
  t.same(receiver.spans.filter((span) => span.service === 'portier-gateway'), [], 'no gateway span exported')
  t.equal(loadGatewayConfig({ IDENTITY_SERVICE_TOKEN: 's'.repeat(40) }).tracing, null, 'the server\'s default is off')
})
