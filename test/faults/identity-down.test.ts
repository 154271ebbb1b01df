import t from 'tap'
import { assertJson, assertProblem, PROBLEM_JSON } from '../helpers/assert.js'
import { pollUntil } from '../helpers/gateway-auth.js'
import { watchForLeaks } from '../helpers/leak-watch.js'
import { assertLoad, latency, sample, startLoad, type LoadTarget } from '../helpers/load-loop.js'
import { startProcessStack } from '../helpers/process-stack.js'

/**
 * Issue 6, faults: identity SIGKILLed while a load of Bearer tokens and cached keys
 * runs through a gateway process. Those keep answering 200; a key the gateway has
 * never seen gets a 503 problem with Retry-After, in bounded time (fail closed); once
 * identity is restarted the same key gets 200 without touching the gateway.
 */

const IDENTITY_TIMEOUT_MS = 1_000
/** undici enforces the timeout with timers that tick every ~0.5 s: it may fire that much late. */
const TIMER_RESOLUTION_MS = 500
const REQUEST_DEADLINE_MS = 5_000

const leaks = watchForLeaks()

t.test('identity killed under load, then restarted', async (t) => {
  const s = await startProcessStack(t, { leaks, gatewayEnv: { GATEWAY_IDENTITY_TIMEOUT_MS: String(IDENTITY_TIMEOUT_MS) } })
  const tokens = await s.login()
  const cached = await s.createKey(['users:list'])
  const uncached = await s.createKey(['users:list'])
  const url = `${s.gateway.url}/users?per_page=1`
  assertJson(t, await s.call('/users?per_page=1', { headers: { 'x-api-key': cached.key } }), 200, 'before: the key, now cached')
  assertJson(t, await s.call('/users?per_page=1', { bearer: tokens.access_token }), 200, 'before: the token')

  const load = startLoad({
    loops: 4,
    durationMs: 20_000,
    requestTimeoutMs: REQUEST_DEADLINE_MS,
    pauseMs: 5,
    target: (loop): LoadTarget => loop % 2 === 0
      ? { label: 'bearer', url, headers: { authorization: `Bearer ${tokens.access_token}` } }
      : { label: 'cached key', url, headers: { 'x-api-key': cached.key } }
  })
  await new Promise((resolve) => setTimeout(resolve, 300))
  const killedAt = performance.now()
  t.equal(await s.identity.kill('SIGKILL'), null, 'identity SIGKILLed')
  await t.rejects(fetch(`${s.identity.adminUrl}/healthz`), 'identity is gone')

  // The same uncached key, over and over: a refusal must never be cached as a verdict.
  const refusals = await Promise.all(Array.from({ length: 6 }, async (_, i) => {
    await new Promise((resolve) => setTimeout(resolve, i * 150))
    return await sample({ label: 'uncached key', url, headers: { 'x-api-key': uncached.key } }, { agent: false, requestTimeoutMs: REQUEST_DEADLINE_MS })
  }))
  for (const [i, refusal] of refusals.entries()) {
    t.match(refusal, { status: 503, contentType: PROBLEM_JSON, code: 'identity_unavailable', hung: false }, `uncached key, attempt ${i + 1}: 503 identity_unavailable problem+json`)
    t.match(refusal.retryAfter, /^[1-9]\d*$/, `uncached key, attempt ${i + 1}: Retry-After in seconds`)
  }
  const slowest = Math.max(...refusals.map((r) => r.ms))
  t.ok(slowest <= IDENTITY_TIMEOUT_MS + 1_000, `each 503 came within identity's timeout (${IDENTITY_TIMEOUT_MS} ms) + 1000 ms: slowest ${slowest} ms`)
  assertProblem(t, await s.call('/users?per_page=1', { headers: { 'x-api-key': `${uncached.key.slice(0, -1)}${uncached.key.endsWith('A') ? 'B' : 'A'}` } }),
    401, 'invalid_api_key', 'identity down: a key with a bad checksum is still a 401, refused without I/O')
  const readiness = await s.call('/readyz')
  t.match(readiness, { status: 200, body: { status: 'degraded', checks: { identity: 'down', jwks: 'loaded' } } }, 'readiness: degraded, identity down')

  const restartedAt = performance.now()
  await s.identity.restart()
  const answersAgain = performance.now()
  const samples = await load.stop()
  const recovered = await pollUntil(async () => (await s.call('/users?per_page=1', { headers: { 'x-api-key': uncached.key } })).status === 200,
    { since: answersAgain, timeoutMs: 10_000, intervalMs: 50 })
  t.not(recovered, null, `recovery is automatic: the uncached key gets 200 ${String(recovered)} ms after identity answers again (gateway untouched)`)
  t.equal(s.gateway.running(), true, 'the same gateway process throughout')
  t.match((await s.call('/readyz')).body, { status: 'ready', checks: { identity: 'up' } }, 'readiness: ready again')

  assertLoad(t, samples, 'tokens and cached keys while identity was down', [200])
  for (const label of ['bearer', 'cached key']) {
    const during = samples.filter((x) => x.label === label && x.startedAt > killedAt && x.startedAt < restartedAt)
    t.ok(during.length > 0, `${label}: ${during.length} requests while identity was down, all 200 (latency ${JSON.stringify(latency(during))})`)
  }

  // A hung identity (stopped, its sockets open) is worse than a dead one: only the timeout bounds the wait.
  const neverSeen = await s.createKey(['users:list'])
  s.identity.child().kill('SIGSTOP')
  t.teardown(() => { s.identity.child().kill('SIGCONT') })
  const hung = await Promise.all(Array.from({ length: 4 }, async () =>
    await sample({ label: 'uncached key, identity hung', url, headers: { 'x-api-key': neverSeen.key } }, { agent: false, requestTimeoutMs: REQUEST_DEADLINE_MS })))
  const tokenMeanwhile = await sample({ label: 'bearer, identity hung', url, headers: { authorization: `Bearer ${tokens.access_token}` } }, { agent: false, requestTimeoutMs: REQUEST_DEADLINE_MS })
  s.identity.child().kill('SIGCONT')
  for (const [i, answer] of hung.entries()) {
    t.match(answer, { status: 503, contentType: PROBLEM_JSON, code: 'identity_unavailable', hung: false },
      `identity hung: uncached key, request ${i + 1} is a 503 after ${answer.ms} ms (timeout ${IDENTITY_TIMEOUT_MS} ms)`)
    t.ok(answer.ms <= IDENTITY_TIMEOUT_MS + TIMER_RESOLUTION_MS + 1_000, `identity hung: request ${i + 1} answered within the timeout + ${TIMER_RESOLUTION_MS} ms timer resolution + 1000 ms`)
  }
  t.match(tokenMeanwhile, { status: 200, hung: false }, `identity hung: a token still gets 200 (${tokenMeanwhile.ms} ms)`)
  const resumed = await pollUntil(async () => (await s.call('/users?per_page=1', { headers: { 'x-api-key': neverSeen.key } })).status === 200,
    { timeoutMs: 10_000, intervalMs: 50 })
  t.not(resumed, null, `identity resumed: the key gets 200 (${String(resumed)} ms after SIGCONT)`)

  await leaks.assertNoLeaks(t)
})
