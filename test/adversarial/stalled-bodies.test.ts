import t, { type Test } from 'tap'
import { readFileSync } from 'node:fs'
import { watchForLeaks } from '../helpers/leak-watch.js'
import { assertLoad, latency, startLoad } from '../helpers/load-loop.js'
import { startProcessStack, type ServerProcess } from '../helpers/process-stack.js'
import { chunk, openStalled, requestHead, type StalledClient, type StallOutcome } from '../helpers/stalled-client.js'

/**
 * Clients that declare a body and never finish it, on every listener, as real
 * processes. Against the gateway, 500 connections at once: anonymous logins (Content-
 * Length and chunked) stalled under identity's small limit, anonymous bodies to an
 * authenticated route (refused before they are read), and 1 MiB bodies to an upstream
 * route with a valid API key (Content-Length and chunked). The gateway's memory grows
 * by less than 64 MiB (the bodies in flight share one budget; those beyond it are
 * refused with 503 and their connections closed), every connection is cut within the
 * request timeout (408 request_timeout) or refused at once, and a legitimate client
 * keeps getting its 200s meanwhile. Identity's two listeners and the mock cut their
 * stalled requests too, and a body dripped a byte at a time is cut like a stalled one.
 */

const HEADERS_TIMEOUT_MS = 2_000
const REQUEST_TIMEOUT_MS = 3_000
/** Node checks every tenth of the shortest timeout; the rest is a loaded, shared machine. */
const CUT_MARGIN_MS = 2_500
/** A 408 never comes before its timeout (the clock starts at the request's first byte, after our start). */
const EARLY_TOLERANCE_MS = 100
const MAX_RSS_GROWTH_BYTES = 64 * 1024 * 1024
const GIVE_UP_MS = REQUEST_TIMEOUT_MS + 15_000
const ONE_MIB = 1_048_576

const listenerEnv = (prefix: string): Record<string, string> => ({
  [`${prefix}_HEADERS_TIMEOUT_MS`]: String(HEADERS_TIMEOUT_MS),
  [`${prefix}_REQUEST_TIMEOUT_MS`]: String(REQUEST_TIMEOUT_MS)
})

const leaks = watchForLeaks()

function rssBytes (server: ServerProcess): number {
  const status = readFileSync(`/proc/${server.child().pid as number}/status`, 'utf8')
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? 0) * 1024
}

const sleep = async (ms: number): Promise<void> => { await new Promise((resolve) => setTimeout(resolve, ms)) }

/** Opens `count` stalled clients of one kind, `batch` at a time (each batch connected before the next starts). */
async function openMany (count: number, batch: number, open: (i: number) => Promise<StalledClient>): Promise<StalledClient[]> {
  const clients: StalledClient[] = []
  for (let i = 0; i < count; i += batch) {
    clients.push(...await Promise.all(Array.from({ length: Math.min(batch, count - i) }, async (_, j) => await open(i + j))))
  }
  return clients
}

function counts (outcomes: StallOutcome[]): Record<string, number> {
  const out: Record<string, number> = {}
  for (const o of outcomes) {
    const key = `${o.statuses.join('+') || 'no answer'} ${o.code ?? ''}`.trim()
    out[key] = (out[key] ?? 0) + 1
  }
  return out
}

/** Every connection closed by the server within the request timeout, and each cut one answered 408 request_timeout. */
function assertCut (t: Test, label: string, outcomes: StallOutcome[], timeoutMs: number, allowed: (o: StallOutcome) => boolean): void {
  const stillOpen = outcomes.filter((o) => o.closedAfterMs === null)
  const late = outcomes.filter((o) => o.closedAfterMs !== null && o.closedAfterMs > timeoutMs + CUT_MARGIN_MS)
  const early = outcomes.filter((o) => o.code === 'request_timeout' && (o.closedAfterMs ?? 0) < timeoutMs - EARLY_TOLERANCE_MS)
  const unexpected = outcomes.filter((o) => !allowed(o))
  const closedAfter = outcomes.map((o) => o.closedAfterMs ?? Number.POSITIVE_INFINITY)
  t.equal(stillOpen.length, 0, `${label}: every connection was closed by the server (${outcomes.length})`)
  t.equal(late.length, 0, `${label}: each within ${timeoutMs} ms + ${CUT_MARGIN_MS} ms (slowest ${Math.round(Math.max(...closedAfter))} ms)`,
    { late: late.slice(0, 5) })
  t.equal(early.length, 0, `${label}: no 408 before the timeout`, { early: early.slice(0, 5) })
  t.equal(unexpected.length, 0, `${label}: answers ${JSON.stringify(counts(outcomes))}`, { unexpected: unexpected.slice(0, 5) })
}

const timedOut = (o: StallOutcome): boolean => o.statuses.at(-1) === 408 && o.code === 'request_timeout'
/** Held within the budget until the timeout, or refused at once because the budget was full. */
const heldOrRefused = (o: StallOutcome): boolean => timedOut(o) ||
  (o.statuses.length === 1 && o.statuses[0] === 503 && o.code === 'bodies_at_capacity' && o.retryAfter === '1')

t.test('stalled and dripped requests on every listener', async (t) => {
  const s = await startProcessStack(t, {
    leaks,
    gatewayEnv: listenerEnv('GATEWAY'),
    identityEnv: listenerEnv('IDENTITY'),
    mockEnv: listenerEnv('UPSTREAM_MOCK')
  })
  const key = await s.createKey(['users:list', 'debug:write'])
  const gatewayHost = new URL(s.gateway.url).host
  const filler = Buffer.alloc(ONE_MIB, 0x20)
  const legitTarget = { label: 'GET /users', url: `${s.gateway.url}/users?per_page=1`, headers: { 'x-api-key': key.key } }

  await t.test('500 stalled bodies at once through the gateway', async (t) => {
    // Warm every path first, so the baseline is the gateway's working size, not its start-up size.
    for (let i = 0; i < 20; i++) {
      const warm = await fetch(`${s.gateway.url}/echo`, { method: 'POST', headers: { 'x-api-key': key.key, 'content-type': 'application/json' }, body: JSON.stringify({ a: 'x'.repeat(100_000) }) })
      await warm.arrayBuffer()
      await (await fetch(legitTarget.url, { headers: legitTarget.headers })).arrayBuffer()
    }
    await sleep(500)
    const baseline = rssBytes(s.gateway)
    let peak = baseline
    const sampler = setInterval(() => { peak = Math.max(peak, rssBytes(s.gateway)) }, 100)
    t.teardown(() => { clearInterval(sampler) })
    const legit = startLoad({ loops: 2, durationMs: 60_000, requestTimeoutMs: 5_000, pauseMs: 20, target: () => legitTarget })

    const anonymousLogin = {}
    const withKey = { 'x-api-key': key.key }
    const kinds: Array<{ label: string, open: () => Promise<StalledClient> }> = [
      {
        label: 'anonymous POST /sessions, Content-Length 8000, 4000 bytes sent',
        open: async () => await openStalled(s.gateway.url, 'sessions CL', [
          Buffer.from(requestHead('POST', '/sessions', gatewayHost, anonymousLogin, 8_000)), filler.subarray(0, 4_000)], { giveUpAfterMs: GIVE_UP_MS })
      },
      {
        label: 'anonymous POST /sessions, chunked, 4000 bytes sent',
        open: async () => await openStalled(s.gateway.url, 'sessions chunked', [
          Buffer.from(requestHead('POST', '/sessions', gatewayHost, anonymousLogin, 'chunked')), ...chunk(filler.subarray(0, 4_000))], { giveUpAfterMs: GIVE_UP_MS })
      },
      {
        label: 'anonymous POST /echo (needs a credential), Content-Length 1048575, 1048000 bytes sent',
        open: async () => await openStalled(s.gateway.url, 'anonymous echo', [
          Buffer.from(requestHead('POST', '/echo', gatewayHost, {}, ONE_MIB - 1)), filler.subarray(0, 1_048_000)], { giveUpAfterMs: GIVE_UP_MS })
      },
      {
        label: 'POST /echo with an API key, Content-Length 1048575, 1048000 bytes sent',
        open: async () => await openStalled(s.gateway.url, 'echo CL', [
          Buffer.from(requestHead('POST', '/echo', gatewayHost, withKey, ONE_MIB - 1)), filler.subarray(0, 1_048_000)], { giveUpAfterMs: GIVE_UP_MS })
      },
      {
        label: 'POST /echo with an API key, chunked, 1000000 bytes sent',
        open: async () => await openStalled(s.gateway.url, 'echo chunked', [
          Buffer.from(requestHead('POST', '/echo', gatewayHost, withKey, 'chunked')), ...chunk(filler.subarray(0, 1_000_000))], { giveUpAfterMs: GIVE_UP_MS })
      }
    ]
    const perKind = 100
    const opened = await Promise.all(kinds.map(async (kind) => await openMany(perKind, 25, async () => await kind.open())))
    t.equal(opened.flat().length, 500, '500 connections opened')
    const outcomes = await Promise.all(opened.map(async (clients) => await Promise.all(clients.map(async (c) => await c.outcome))))
    clearInterval(sampler)
    const legitSamples = await legit.stop()

    const growth = peak - baseline
    t.comment(`gateway RSS: ${(baseline / 2 ** 20).toFixed(1)} MiB before, ${(peak / 2 ** 20).toFixed(1)} MiB at the peak (+${(growth / 2 ** 20).toFixed(1)} MiB)`)
    t.ok(growth < MAX_RSS_GROWTH_BYTES, `the gateway's RSS grew by ${(growth / 2 ** 20).toFixed(1)} MiB < 64 MiB`)

    const [sessionsCl, sessionsChunked, anonymousEcho, echoCl, echoChunked] = outcomes as [StallOutcome[], StallOutcome[], StallOutcome[], StallOutcome[], StallOutcome[]]
    assertCut(t, kinds[0]?.label as string, sessionsCl, REQUEST_TIMEOUT_MS, timedOut)
    assertCut(t, kinds[1]?.label as string, sessionsChunked, REQUEST_TIMEOUT_MS, timedOut)
    // Refused by the gate before a byte of the body is read, and the connection closed: the rest is never received.
    assertCut(t, kinds[2]?.label as string, anonymousEcho, REQUEST_TIMEOUT_MS, (o) => o.statuses.length === 1 && o.statuses[0] === 401 && o.code === 'credentials_missing')
    assertCut(t, kinds[3]?.label as string, echoCl, REQUEST_TIMEOUT_MS, heldOrRefused)
    assertCut(t, kinds[4]?.label as string, echoChunked, REQUEST_TIMEOUT_MS, heldOrRefused)
    const echo = [...echoCl, ...echoChunked]
    t.ok(echo.some(timedOut), `some 1 MiB bodies were held until the timeout (${echo.filter(timedOut).length})`)
    t.ok(echo.some((o) => o.code === 'bodies_at_capacity'), `the others were refused: the budget was full (${echo.filter((o) => o.code === 'bodies_at_capacity').length})`)

    assertLoad(t, legitSamples, 'a legitimate client during the attack', [200])
    const legitLatency = latency(legitSamples)
    t.comment(`legitimate GET /users during the attack: ${legitLatency.count} requests, p50 ${legitLatency.p50} ms, p99 ${legitLatency.p99} ms, max ${legitLatency.max} ms`)
    t.ok(legitLatency.p99 < 2_000, `its p99 latency ${legitLatency.p99} ms < 2000 ms`)
  })

  await t.test('identity\'s listeners and the mock cut stalled requests too', async (t) => {
    const identityHost = new URL(s.identity.publicUrl).host
    const adminHost = new URL(s.identity.adminUrl).host
    const mockHost = new URL(s.mock.url).host
    const admin = { authorization: `Bearer ${s.identity.adminToken}` }
    const cases: Array<{ label: string, url: string, bytes: Buffer | Buffer[], timeoutMs: number, mayBeRefused?: boolean }> = [
      { label: 'identity POST /sessions, Content-Length 4000, 100 bytes sent', url: s.identity.publicUrl, timeoutMs: REQUEST_TIMEOUT_MS, bytes: [Buffer.from(requestHead('POST', '/sessions', identityHost, {}, 4_000)), filler.subarray(0, 100)] },
      { label: 'identity POST /tokens, chunked, 100 bytes sent', url: s.identity.publicUrl, timeoutMs: REQUEST_TIMEOUT_MS, bytes: [Buffer.from(requestHead('POST', '/tokens', identityHost, {}, 'chunked')), ...chunk(filler.subarray(0, 100))] },
      { label: 'identity, a request head never finished', url: s.identity.publicUrl, timeoutMs: HEADERS_TIMEOUT_MS, bytes: Buffer.from(`POST /sessions HTTP/1.1\r\nhost: ${identityHost}\r\n`) },
      { label: 'identity, a connection that sends nothing', url: s.identity.publicUrl, timeoutMs: HEADERS_TIMEOUT_MS, bytes: Buffer.alloc(0) },
      { label: 'identity admin POST /admin/roles, Content-Length 200000, 100000 bytes sent', url: s.identity.adminUrl, timeoutMs: REQUEST_TIMEOUT_MS, bytes: [Buffer.from(requestHead('POST', '/admin/roles', adminHost, admin, 200_000)), filler.subarray(0, 100_000)] },
      { label: 'identity admin, chunked, 100000 bytes sent', url: s.identity.adminUrl, timeoutMs: REQUEST_TIMEOUT_MS, bytes: [Buffer.from(requestHead('PUT', '/admin/roles/x', adminHost, admin, 'chunked')), ...chunk(filler.subarray(0, 100_000))] },
      // 40 bodies of up to 1 MiB: more than the mock's budget holds, so some are refused at once.
      { label: 'mock POST /echo, Content-Length 1048575, 1048000 bytes sent', url: s.mock.url, timeoutMs: REQUEST_TIMEOUT_MS, mayBeRefused: true, bytes: [Buffer.from(requestHead('POST', '/echo', mockHost, {}, ONE_MIB - 1)), filler.subarray(0, 1_048_000)] },
      { label: 'mock POST /echo, chunked, 500000 bytes sent', url: s.mock.url, timeoutMs: REQUEST_TIMEOUT_MS, mayBeRefused: true, bytes: [Buffer.from(requestHead('POST', '/echo', mockHost, {}, 'chunked')), ...chunk(filler.subarray(0, 500_000))] },
      { label: 'mock, a request head never finished', url: s.mock.url, timeoutMs: HEADERS_TIMEOUT_MS, bytes: Buffer.from(`GET /users HTTP/1.1\r\nhost: ${mockHost}\r\n`) }
    ]
    const opened = await Promise.all(cases.map(async (c) => await openMany(20, 20, async () => await openStalled(c.url, c.label, c.bytes, { giveUpAfterMs: GIVE_UP_MS }))))
    const outcomes = await Promise.all(opened.map(async (clients) => await Promise.all(clients.map(async (c) => await c.outcome))))
    cases.forEach((c, i) => { assertCut(t, c.label, outcomes[i] as StallOutcome[], c.timeoutMs, c.mayBeRefused === true ? heldOrRefused : timedOut) })
  })

  await t.test('a request dripped a byte at a time is cut at the request timeout, like a stalled one', async (t) => {
    const drip = { giveUpAfterMs: GIVE_UP_MS, dripEveryMs: 250 }
    const cases: Array<{ label: string, url: string, bytes: Buffer, timeoutMs: number, dripByte?: Buffer }> = [
      { label: 'gateway POST /echo with an API key', url: s.gateway.url, timeoutMs: REQUEST_TIMEOUT_MS, bytes: Buffer.from(requestHead('POST', '/echo', gatewayHost, { 'x-api-key': key.key }, 100_000)) },
      { label: 'gateway anonymous POST /sessions', url: s.gateway.url, timeoutMs: REQUEST_TIMEOUT_MS, bytes: Buffer.from(requestHead('POST', '/sessions', gatewayHost, {}, 8_000)) },
      { label: 'gateway, a header value dripped', url: s.gateway.url, timeoutMs: HEADERS_TIMEOUT_MS, bytes: Buffer.from(`GET /users HTTP/1.1\r\nhost: ${gatewayHost}\r\nx-slow: `), dripByte: Buffer.from('a') },
      { label: 'identity POST /sessions', url: s.identity.publicUrl, timeoutMs: REQUEST_TIMEOUT_MS, bytes: Buffer.from(requestHead('POST', '/sessions', new URL(s.identity.publicUrl).host, {}, 8_000)) },
      { label: 'mock POST /echo', url: s.mock.url, timeoutMs: REQUEST_TIMEOUT_MS, bytes: Buffer.from(requestHead('POST', '/echo', new URL(s.mock.url).host, {}, 100_000)) }
    ]
    const outcomes = await Promise.all(cases.map(async (c) =>
      await (await openStalled(c.url, c.label, c.bytes, { ...drip, ...(c.dripByte !== undefined ? { dripByte: c.dripByte } : {}) })).outcome))
    cases.forEach((c, i) => { assertCut(t, c.label, [outcomes[i] as StallOutcome], c.timeoutMs, timedOut) })
  })

  await t.test('afterwards every listener answers as before', async (t) => {
    t.equal((await s.call('/users?per_page=1', { headers: { 'x-api-key': key.key } })).status, 200, 'gateway')
    t.equal((await fetch(`${s.identity.publicUrl}/healthz`)).status, 200, 'identity')
    t.equal((await fetch(`${s.mock.url}/healthz`)).status, 200, 'mock')
    t.equal((await s.call('/echo', { headers: { 'x-api-key': key.key }, body: { a: 'x'.repeat(500_000) } })).status, 200, 'a 500 KB body goes through: the budget was given back')
  })
})

t.test('leaks', async (t) => { await leaks.assertNoLeaks(t) })
