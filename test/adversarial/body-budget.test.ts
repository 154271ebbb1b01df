import t from 'tap'
import { assertProblem } from '../helpers/assert.js'
import { watchForLeaks } from '../helpers/leak-watch.js'
import { startProcessStack } from '../helpers/process-stack.js'
import { requestBytes, socketRequest } from '../helpers/raw-socket.js'
import { openStalled, requestHead, type StalledClient } from '../helpers/stalled-client.js'

/**
 * The gateway's budget of body bytes held across all requests in flight (a process,
 * with a small budget so that a few bodies fill it). A body that does not fit is
 * refused at once with 503 bodies_at_capacity and Retry-After, its connection closed;
 * a body's share comes back when its client goes away or its request times out, and
 * then bodies are accepted again. Identity's routes have their own eighth: clients with
 * credentials filling the rest do not stop logins, nor the reverse. A body larger than
 * the whole budget could never fit: 413.
 */

const TOTAL_BYTES = 2_400_000
/** What upstream routes get: the total less identity's eighth. */
const UPSTREAM_SHARE_BYTES = TOTAL_BYTES - Math.floor(TOTAL_BYTES / 8)
const REQUEST_TIMEOUT_MS = 3_000
const GIVE_UP_MS = REQUEST_TIMEOUT_MS + 15_000

const leaks = watchForLeaks()
const sleep = async (ms: number): Promise<void> => { await new Promise((resolve) => setTimeout(resolve, ms)) }

t.test('the body budget', async (t) => {
  const s = await startProcessStack(t, {
    leaks,
    gatewayEnv: {
      GATEWAY_BUFFERED_BODIES_MAX_BYTES: String(TOTAL_BYTES),
      GATEWAY_REQUEST_TIMEOUT_MS: String(REQUEST_TIMEOUT_MS),
      GATEWAY_HEADERS_TIMEOUT_MS: '2000',
      // Above the budget, so that the budget is what refuses the largest bodies.
      GATEWAY_BODY_LIMIT_BYTES: String(4 * 1_048_576)
    }
  })
  const key = await s.createKey(['debug:write'])
  const host = new URL(s.gateway.url).host
  const headers = { 'x-api-key': key.key }
  const body = (bytes: number): string => JSON.stringify({ a: 'x'.repeat(bytes - 8) })
  /** Two 1 MB bodies that stall: together they hold all but ~100 KB of the upstream share. */
  const stallTwo = async (): Promise<StalledClient[]> => await Promise.all([0, 1].map(async (i) => await openStalled(s.gateway.url, `stalled ${i}`,
    [Buffer.from(requestHead('POST', '/echo', host, headers, 1_000_000)), Buffer.alloc(999_000, 0x20)], { giveUpAfterMs: GIVE_UP_MS })))

  await t.test('full: a body that does not fit is refused at once with 503 and Retry-After, its connection closed', async (t) => {
    const stalled = await stallTwo()
    await sleep(500)
    const startedAt = performance.now()
    const refused = await socketRequest(s.gateway.url, requestBytes('POST /echo HTTP/1.1', [['host', host], ['x-api-key', key.key], ['content-type', 'application/json'],
      ['accept', 'application/json'], ['content-length', '200000']], body(200_000)), 10_000)
    t.equal(refused.status, 503, '503', { body: refused.text })
    t.match(refused.body, { code: 'bodies_at_capacity', status: 503 }, 'bodies_at_capacity')
    t.equal(refused.headers['retry-after'], '1', 'Retry-After: 1')
    t.equal(refused.headers.connection, 'close', 'Connection: close')
    t.equal((await s.call('/echo', { headers, body: { small: true } })).status, 200, 'a small body still fits in what is left')

    const login = await s.call('/sessions', { body: { session: s.user } })
    t.equal(login.status, 201, 'logins have their own share: a full upstream share does not stop them')
    leaks.secret(login.body.access_token, login.body.refresh_token)

    // One client gives up: its share comes back at once, long before any timeout.
    stalled[0]?.socket.destroy()
    await sleep(200)
    t.equal((await s.call('/echo', { headers, body: body(200_000) })).status, 200, 'the same 200 KB body fits once a stalled client has gone')
    t.ok(performance.now() - startedAt < REQUEST_TIMEOUT_MS, 'before the other stalled body timed out')

    const cut = await stalled[1]?.outcome
    t.match(cut, { statuses: [408], code: 'request_timeout' }, 'the other is cut by the request timeout')
    await sleep(200)
    t.equal((await s.call('/echo', { headers, body: body(1_000_000) })).status, 200, 'and its share comes back: a 1 MB body fits')
  })

  await t.test('the budget is whole again after each round: no share is ever lost', async (t) => {
    for (let round = 1; round <= 3; round++) {
      const stalled = await stallTwo()
      await sleep(300)
      for (const client of stalled) client.socket.destroy()
      await sleep(300)
      const both = await Promise.all([0, 1].map(async () => (await s.call('/echo', { headers, body: body(1_000_000) })).status))
      t.same(both, [200, 200], `round ${round}: two 1 MB bodies at once fit again`)
    }
  })

  await t.test('identity\'s share: anonymous logins that stall fill it, not the upstreams\'', async (t) => {
    const stalled = await Promise.all(Array.from({ length: 45 }, async (_, i) => await openStalled(s.gateway.url, `login ${i}`,
      [Buffer.from(requestHead('POST', '/sessions', host, {}, 8_000)), Buffer.alloc(7_000, 0x20)], { giveUpAfterMs: GIVE_UP_MS })))
    await sleep(500)
    t.equal((await s.call('/echo', { headers, body: body(1_000_000) })).status, 200, 'a 1 MB body to an upstream route is accepted meanwhile')
    const outcomes = await Promise.all(stalled.map(async (c) => await c.outcome))
    const refused = outcomes.filter((o) => o.code === 'bodies_at_capacity').length
    const held = outcomes.filter((o) => o.code === 'request_timeout').length
    t.ok(refused > 0 && held > 0 && refused + held === outcomes.length, `${held} logins held until the timeout, ${refused} refused with 503`)
  })

  await t.test('a body larger than the whole budget is a 413 naming it, not a 503 to retry', async (t) => {
    const answer = await socketRequest(s.gateway.url, requestBytes('POST /echo HTTP/1.1', [['host', host], ['x-api-key', key.key], ['content-type', 'application/json'],
      ['accept', 'application/json'], ['content-length', '3000000']]), 10_000)
    assertProblem(t, answer, 413, 'body_too_large')
    t.equal((answer.body as { detail: string }).detail, `The request body exceeds ${UPSTREAM_SHARE_BYTES} bytes.`)
  })
})

t.test('leaks', async (t) => { await leaks.assertNoLeaks(t) })
