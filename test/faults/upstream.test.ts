import t, { type Test } from 'tap'
import { createServer, type Socket } from 'node:net'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { PROBLEM_JSON } from '../helpers/assert.js'
import { mockUpstreamsContent } from '../helpers/upstreams-file.js'
import { pollUntil } from '../helpers/gateway-auth.js'
import { tempDir } from '../helpers/temp.js'
import { watchForLeaks } from '../helpers/leak-watch.js'
import { assertLoad, latency, outcomes, sample, startLoad, type LoadSample, type LoadTarget } from '../helpers/load-loop.js'
import { startProcessStack } from '../helpers/process-stack.js'

/**
 * Issue 6, faults: an upstream that answers slower than its route's timeout is a 504
 * in about that timeout, one that accepts connections and never answers too, and one
 * killed mid-load is a 502 at once, for the requests waiting on it as for the new
 * ones; nothing hangs, and service resumes when it is back. Real processes: the
 * gateway and the mock from dist/, the silent upstream a socket that never writes.
 */

const RESPONSE_TIMEOUT_MS = 800
const MARGIN_MS = 1_000
/**
 * undici enforces headers and body timeouts with its "fast timers", which tick every
 * ~0.5 s: a timeout fires up to that much before or after its value.
 */
const TIMER_RESOLUTION_MS = 500
const REQUEST_DEADLINE_MS = RESPONSE_TIMEOUT_MS + 4_000

const leaks = watchForLeaks()

/** A TCP server that accepts every connection and never writes a byte. */
async function silentUpstream (t: Test): Promise<string> {
  const sockets = new Set<Socket>()
  const server = createServer((socket) => {
    sockets.add(socket)
    socket.on('error', () => {})
    socket.on('close', () => sockets.delete(socket))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(async () => {
    for (const socket of sockets) socket.destroy()
    await new Promise((resolve) => server.close(resolve))
  })
  return `http://127.0.0.1:${(server.address() as { port: number }).port}`
}

function assertAllProblems (t: Test, samples: readonly LoadSample[], status: number, code: string, label: string): void {
  const wrong = samples.filter((x) => x.status !== status || x.code !== code || x.contentType !== PROBLEM_JSON)
  t.equal(wrong.length, 0, `${label}: all ${samples.length} are ${status} ${code} problem+json (${JSON.stringify(outcomes(samples))})`,
    { wrong: wrong.slice(0, 5).map(({ status, code, error, ms }) => ({ status, code, error, ms })) })
}

t.test('upstreams slow, silent or killed: 504 / 502 in bounded time, nothing hangs', async (t) => {
  // No default gateway: the one below has short upstream timeouts in its own file.
  const s = await startProcessStack(t, { leaks, gateways: 0 })
  const silent = await silentUpstream(t)
  const [backoffice] = mockUpstreamsContent(s.mock.url).upstreams
  const file = join(tempDir(t, 'portier-faults-'), 'upstreams.json')
  writeFileSync(file, JSON.stringify({
    upstreams: [
      { ...backoffice, timeouts: { connectMs: 1_000, responseMs: RESPONSE_TIMEOUT_MS } },
      { name: 'silent', target: silent, prefix: '/silent', timeouts: { connectMs: 1_000, responseMs: RESPONSE_TIMEOUT_MS }, routes: [{ method: 'GET', path: '/x', permission: 'debug:read' }] }
    ]
  }))
  const gateway = await s.addGateway({ GATEWAY_UPSTREAMS_FILE: file })
  const key = await s.createKey(['users:list', 'debug:read'])
  const headers = { 'x-api-key': key.key }
  const target = (label: string, path: string): LoadTarget => ({ label, url: `${gateway.url}${path}`, headers })
  const once = async (label: string, path: string): Promise<LoadSample> =>
    await sample(target(label, path), { agent: false, requestTimeoutMs: REQUEST_DEADLINE_MS })
  t.match(await once('warm-up', '/users?per_page=1'), { status: 200 }, 'the key is cached and the upstream answers')

  await t.test('slower than the timeout, or silent: every request of a concurrent batch is a 504 in about the timeout', async (t) => {
    const batch = await Promise.all([
      ...Array.from({ length: 8 }, async () => await once('slow', '/slow?delay_ms=5000')),
      ...Array.from({ length: 4 }, async () => await once('silent', '/silent/x')),
      ...Array.from({ length: 4 }, async () => await once('fast enough', `/slow?delay_ms=${RESPONSE_TIMEOUT_MS / 4}`))
    ])
    const timedOut = batch.filter((x) => x.label !== 'fast enough')
    assertLoad(t, batch, 'the batch', [200, 504])
    assertAllProblems(t, timedOut, 504, 'upstream_timeout', 'slow and silent upstreams')
    t.match(batch.filter((x) => x.label === 'fast enough'), Array(4).fill({ status: 200 }), 'an answer within the timeout is a 200')
    const { max } = latency(timedOut)
    const min = Math.min(...timedOut.map((x) => x.ms))
    t.ok(max <= RESPONSE_TIMEOUT_MS + MARGIN_MS, `each 504 came within the ${RESPONSE_TIMEOUT_MS} ms timeout + ${MARGIN_MS} ms: the last after ${max} ms`)
    t.ok(min >= RESPONSE_TIMEOUT_MS - TIMER_RESOLUTION_MS,
      `and none sooner than the timeout less undici's timer resolution (${TIMER_RESOLUTION_MS} ms): the first after ${min} ms`)
  })

  await t.test('killed under load, then restarted: 502 at once, then 200 again', async (t) => {
    const load = startLoad({
      loops: 6,
      durationMs: 20_000,
      requestTimeoutMs: REQUEST_DEADLINE_MS,
      pauseMs: 5,
      // Half the loops are waiting on the upstream when it dies (the slow route stays under the timeout).
      target: (loop) => loop % 2 === 0 ? target('fast', '/users?per_page=1') : target('waiting', `/slow?delay_ms=${RESPONSE_TIMEOUT_MS / 2}`)
    })
    await new Promise((resolve) => setTimeout(resolve, 500))
    const killedAt = performance.now()
    t.equal(await s.mock.kill('SIGKILL'), null, 'upstream-mock SIGKILLed')
    await new Promise((resolve) => setTimeout(resolve, 1_000))
    const restartedAt = performance.now()
    await s.mock.restart()
    const back = await pollUntil(async () => (await once('probe', '/users?per_page=1')).status === 200, { timeoutMs: 10_000, intervalMs: 50 })
    const backAt = performance.now()
    t.not(back, null, `the gateway reaches the restarted upstream on its own (${String(back)} ms after it answers)`)
    await new Promise((resolve) => setTimeout(resolve, 300))
    const samples = await load.stop()

    assertLoad(t, samples, 'load through the outage', [200, 502])
    const inFlight = samples.filter((x) => x.startedAt < killedAt && x.startedAt + x.ms > killedAt)
    t.ok(inFlight.some((x) => x.label === 'waiting'), `${inFlight.length} requests were in flight at the kill`)
    assertAllProblems(t, inFlight.filter((x) => x.status !== 200), 502, 'upstream_unavailable', 'the requests in flight that the kill cut')
    const endedBy = Math.max(...inFlight.map((x) => Math.round(x.startedAt + x.ms - killedAt)))
    t.ok(endedBy <= MARGIN_MS, `every request in flight at the kill was answered within ${MARGIN_MS} ms of it (the last after ${endedBy} ms)`)
    const whileDown = samples.filter((x) => x.startedAt > killedAt + 50 && x.startedAt + x.ms < restartedAt)
    t.ok(whileDown.length > 0, `${whileDown.length} requests while the upstream was down`)
    assertAllProblems(t, whileDown, 502, 'upstream_unavailable', 'requests while the upstream was down')
    t.ok(latency(whileDown).max <= MARGIN_MS, `each 502 came at once: ${JSON.stringify(latency(whileDown))}`)
    const afterBack = samples.filter((x) => x.startedAt > backAt)
    t.ok(afterBack.length > 0 && afterBack.every((x) => x.status === 200), `after the restart: ${afterBack.length} requests, all 200 (${JSON.stringify(outcomes(afterBack))})`)
  })

  await leaks.assertNoLeaks(t)
})
