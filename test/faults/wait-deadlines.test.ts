import t, { type Test } from 'tap'
import { createServer, type ServerResponse } from 'node:http'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { formatApiKey, randomLookupId, randomSecret } from '../../common/api-key-format.js'
import { PROBLEM_JSON } from '../helpers/assert.js'
import { mockUpstreamsContent } from '../helpers/upstreams-file.js'
import { http } from '../helpers/http.js'
import { pollUntil } from '../helpers/gateway-auth.js'
import { tempDir } from '../helpers/temp.js'
import { watchForLeaks } from '../helpers/leak-watch.js'
import { latency, outcomes, sample, type LoadSample } from '../helpers/load-loop.js'
import { startProcessStack } from '../helpers/process-stack.js'

/**
 * Every wait has a deadline that includes queue time. The gateway's connection pools
 * (128 connections per upstream origin, 32 to identity's internal listener) queue a
 * request when every connection is busy; the upstream's responseMs and
 * GATEWAY_IDENTITY_TIMEOUT_MS count from the moment the gateway starts the call, not
 * from the moment a connection takes it. So one principal holding more slow requests
 * than the pool has connections cannot make another principal's request wait for the
 * queue to drain: it gets its 504 (or 503) on time. Real processes: the gateway and
 * identity from dist/, the slow upstream a plain HTTP server in this process that
 * holds every request it is sent.
 */

const RESPONSE_MS = 1_500
/**
 * Principal A holds the pool through a second upstream entry on the same origin (so the
 * same connection pool) with a longer responseMs: B's request must meet its own 1.5 s
 * deadline while A's are still held, however late a loaded machine lets B start.
 */
const HELD_RESPONSE_MS = 6_000
const IDENTITY_TIMEOUT_MS = 1_000
/** Scheduling slack on a loaded 2-core machine; the queue alone would add a whole timeout per wave. */
const MARGIN_MS = 1_000
const UPSTREAM_CONNECTIONS = 128
const IDENTITY_CONNECTIONS = 32
const REQUEST_DEADLINE_MS = 20_000

const leaks = watchForLeaks()

/** An upstream that holds every request to /hold until the test ends, and answers /fast at once. */
async function holdingUpstream (t: Test): Promise<{ url: string, held: () => number }> {
  const held = new Set<ServerResponse>()
  const server = createServer((request, response) => {
    if (request.url === '/fast') {
      response.writeHead(200, { 'content-type': 'application/json' }).end('{"fast":true}')
      return
    }
    held.add(response)
    response.on('close', () => held.delete(response))
  })
  server.keepAliveTimeout = 60_000
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(async () => {
    for (const response of held) response.destroy()
    server.closeAllConnections()
    await new Promise((resolve) => server.close(resolve))
  })
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, held: () => held.size }
}

function allProblems (samples: readonly LoadSample[], status: number, code: string): boolean {
  return samples.every((x) => x.status === status && x.code === code && x.contentType === PROBLEM_JSON)
}

t.test('queued waits keep their deadline', async (t) => {
  const s = await startProcessStack(t, { leaks, gateways: 0 })
  const slow = await holdingUpstream(t)
  const [backoffice] = mockUpstreamsContent(s.mock.url).upstreams
  const file = join(tempDir(t, 'portier-deadlines-'), 'upstreams.json')
  writeFileSync(file, JSON.stringify({
    upstreams: [
      backoffice,
      // One principal may fill the pool here (fairShare 1): what is tested is the deadline of a request queued behind it.
      {
        name: 'slow',
        target: slow.url,
        prefix: '/slow-svc',
        fairShare: 1,
        timeouts: { connectMs: 1_000, responseMs: RESPONSE_MS },
        routes: [{ method: 'GET', path: '/fast', permission: 'debug:read' }]
      },
      {
        name: 'slow-held',
        target: slow.url,
        prefix: '/slow-held',
        fairShare: 1,
        timeouts: { connectMs: 1_000, responseMs: HELD_RESPONSE_MS },
        routes: [{ method: 'GET', path: '/hold', permission: 'debug:read' }]
      }
    ]
  }))
  const gateway = await s.addGateway({ GATEWAY_UPSTREAMS_FILE: file, GATEWAY_IDENTITY_TIMEOUT_MS: String(IDENTITY_TIMEOUT_MS) })
  const a = await s.createKey(['debug:read'])
  const b = await s.createKey(['debug:read', 'users:list'])
  const get = async (label: string, path: string, key: string): Promise<LoadSample> =>
    await sample({ label, url: `${gateway.url}${path}`, headers: { 'x-api-key': key } }, { agent: false, requestTimeoutMs: REQUEST_DEADLINE_MS })
  t.match(await get('warm-up A', '/slow-svc/fast', a.key), { status: 200 }, 'principal A: key cached, the slow upstream answers /fast')
  t.match(await get('warm-up B', '/slow-svc/fast', b.key), { status: 200 }, 'principal B: the same')

  await t.test('an upstream pool full of one principal\'s held requests: another\'s request is a 504 within responseMs, other upstreams unaffected', async (t) => {
    // More than two pools' worth: without a deadline from the start, the last of these waits three timeouts.
    const flood = Array.from({ length: UPSTREAM_CONNECTIONS * 2 + 40 }, async () => await get('A, held', '/slow-held/hold', a.key))
    const saturated = await pollUntil(async () => slow.held() >= UPSTREAM_CONNECTIONS, { timeoutMs: 10_000, intervalMs: 20 })
    t.not(saturated, null, `the upstream holds ${slow.held()} requests of principal A: every pooled connection is busy`)
    const [queued, otherUpstream] = await Promise.all([
      get('B, same upstream', '/slow-svc/fast', b.key),
      get('B, other upstream', '/users?per_page=1', b.key)
    ])
    t.match(queued, { status: 504, code: 'upstream_timeout', contentType: PROBLEM_JSON, hung: false },
      `principal B, queued behind A on the same upstream: 504 upstream_timeout after ${queued.ms} ms`)
    t.ok(queued.ms <= RESPONSE_MS + MARGIN_MS, `within responseMs (${RESPONSE_MS} ms) + ${MARGIN_MS} ms, not after the queue drained: ${queued.ms} ms`)
    t.match(otherUpstream, { status: 200, hung: false }, `principal B on another upstream: 200 in ${otherUpstream.ms} ms`)
    t.ok(otherUpstream.ms <= MARGIN_MS, `another upstream is not slowed by the full pool: ${otherUpstream.ms} ms`)
    const held = await Promise.all(flood)
    t.ok(allProblems(held, 504, 'upstream_timeout'), `every request of A is a 504 upstream_timeout problem (${JSON.stringify(outcomes(held))})`)
    // Hundreds of answers at once from a starved process: a wider margin, still far below the
    // three timeouts the last of them would wait without a deadline from the start.
    const slowest = latency(held).max
    t.ok(slowest <= HELD_RESPONSE_MS + 2 * MARGIN_MS, `A's queued requests too: the slowest 504 after ${slowest} ms (${JSON.stringify(latency(held))})`)
    t.ok(Math.min(...held.map((x) => x.ms)) >= HELD_RESPONSE_MS - 50, 'and none before their responseMs')
    const after = await pollUntil(async () => (await get('B, after', '/slow-svc/fast', b.key)).status === 200, { timeoutMs: 10_000, intervalMs: 50 })
    t.not(after, null, 'once A\'s requests are gone, the same upstream answers B again')
  })

  await t.test('identity hung with more verifications waiting than its pool has connections: a new key is a 503 within the identity timeout', async (t) => {
    const login = await http(`${gateway.url}/sessions`, { body: { session: s.user } })
    t.equal(login.status, 201, 'logged in through the gateway')
    const tokens = login.body as { access_token: string, refresh_token: string }
    leaks.secret(tokens.access_token, tokens.refresh_token)
    const fresh = await s.createKey(['users:list'])
    // Warm the token path (JWKS, revocations) before identity stops.
    t.match(await sample({ label: 'bearer', url: `${gateway.url}/users?per_page=1`, headers: { authorization: `Bearer ${tokens.access_token}` } },
      { agent: false, requestTimeoutMs: REQUEST_DEADLINE_MS }), { status: 200 }, 'a token works before identity stops')
    s.identity.child().kill('SIGSTOP')
    t.teardown(() => { s.identity.child().kill('SIGCONT') })
    // Well-formed keys identity never issued: each is a verification (no cache has a verdict for it).
    const forged = Array.from({ length: IDENTITY_CONNECTIONS * 3 }, () => formatApiKey(randomLookupId(), randomSecret()))
    const flood = forged.map(async (key) => await get('forged key, identity hung', '/users?per_page=1', key))
    await new Promise((resolve) => setTimeout(resolve, 200))
    const [probe, bearer] = await Promise.all([
      get('new key, identity hung', '/users?per_page=1', fresh.key),
      sample({ label: 'bearer, identity hung', url: `${gateway.url}/users?per_page=1`, headers: { authorization: `Bearer ${tokens.access_token}` } },
        { agent: false, requestTimeoutMs: REQUEST_DEADLINE_MS })
    ])
    const forgedAnswers = await Promise.all(flood)
    s.identity.child().kill('SIGCONT')
    t.match(probe, { status: 503, code: 'identity_unavailable', contentType: PROBLEM_JSON, hung: false },
      `a key the gateway never saw, queued behind ${forged.length} verifications: 503 identity_unavailable after ${probe.ms} ms`)
    t.match(probe.retryAfter, /^[1-9]\d*$/, 'with Retry-After')
    t.ok(probe.ms <= IDENTITY_TIMEOUT_MS + MARGIN_MS, `within GATEWAY_IDENTITY_TIMEOUT_MS (${IDENTITY_TIMEOUT_MS} ms) + ${MARGIN_MS} ms: ${probe.ms} ms`)
    t.ok(allProblems(forgedAnswers, 503, 'identity_unavailable'), `every forged key is a 503 identity_unavailable (${JSON.stringify(outcomes(forgedAnswers))})`)
    const slowest = latency(forgedAnswers).max
    t.ok(slowest <= IDENTITY_TIMEOUT_MS + MARGIN_MS, `the queued verifications too: the slowest 503 after ${slowest} ms (${JSON.stringify(latency(forgedAnswers))})`)
    t.match(bearer, { status: 200, hung: false }, `a token meanwhile: 200 in ${bearer.ms} ms`)
    const resumed = await pollUntil(async () => (await get('new key, identity back', '/users?per_page=1', fresh.key)).status === 200, { timeoutMs: 10_000, intervalMs: 50 })
    t.not(resumed, null, 'identity resumed: the new key gets 200')
  })

  await leaks.assertNoLeaks(t)
})
