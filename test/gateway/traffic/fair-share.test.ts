import t from 'tap'
import { startGateway, mockUpstreams, startStack } from '../../helpers/gateway.js'
import { assertProblem } from '../../helpers/assert.js'
import type { UpstreamsConfig } from '../../../gateway/routing/index.js'

/**
 * No principal holds more than its share of an upstream's connections (half the pool
 * by default): past it, a request is refused at once with 429 concurrency_limited and
 * Retry-After: 1, so another principal's request to the same upstream never queues
 * behind it. A key is a principal, and so is a user for tokens. fairShare: 1 turns it
 * off. A real gateway in front of upstream-mock's /slow.
 */

const SLOW_MS = 2_500

async function timed<T> (work: () => Promise<T>): Promise<{ value: T, ms: number }> {
  const started = performance.now()
  const value = await work()
  return { value, ms: performance.now() - started }
}

function withPool (config: UpstreamsConfig, connections: number, fairShare: number): UpstreamsConfig {
  return { upstreams: config.upstreams.map((u) => ({ ...u, connections, fairShare })) }
}

t.test('a fair share of every upstream', async (t) => {
  const s = await startStack(t, { roles: { reader: ['users:list', 'debug:read'] } })
  const hog = await s.createKey(['debug:read', 'users:list'])
  const other = await s.createKey(['users:list'])
  const ask = async (key: string, path: string) => await s.gateway.call(path, { headers: { 'x-api-key': key } })

  await t.test('one key holding 200 slow requests: past half the pool it is refused at once, and another key is not held up', async (t) => {
    // Unloaded latency first, warm (the key cached, the connection pool open).
    for (let i = 0; i < 3; i++) await ask(other.key, '/users?per_page=1')
    const unloaded = Math.max(...await Promise.all(Array.from({ length: 5 }, async () => (await timed(async () => await ask(other.key, '/users?per_page=1'))).ms)))
    const hogStarted = performance.now()
    const hogging = Array.from({ length: 200 }, async () => await timed(async () => await ask(hog.key, `/slow?delay_ms=${SLOW_MS}`)))
    // The refusals come at once; the slow ones hold 64 connections (half of 128) for SLOW_MS.
    await new Promise((resolve) => setTimeout(resolve, 500))
    const during = await timed(async () => await ask(other.key, '/users?per_page=1'))
    const duringAnsweredAt = performance.now() - hogStarted
    t.equal(during.value.status, 200, 'the other key is served')
    const hogOwn = await ask(hog.key, '/users?per_page=1')
    assertProblem(t, hogOwn, 429, 'concurrency_limited', 'the hog\'s own other request to the upstream is past its share too')
    const outcomes = await Promise.all(hogging)
    const served = outcomes.filter((o) => o.value.status === 200)
    const refused = outcomes.filter((o) => o.value.status === 429)
    t.equal(served.length, 64, 'half the pool of 128 served')
    t.equal(refused.length, 136, 'the rest refused')
    // Queued behind the hog's own, a refusal could not come before one of them is answered,
    // SLOW_MS after it was sent: so every refusal must come before the first answer. (A
    // bound in milliseconds alone fails on a loaded machine, where opening 200 connections
    // at once takes a second by itself.)
    const slowest = Math.max(...refused.map((o) => o.ms))
    const firstAnswer = Math.min(...served.map((o) => o.ms))
    t.ok(firstAnswer >= SLOW_MS, `the served ones were held for the upstream's delay (first answered after ${Math.round(firstAnswer)} ms)`)
    t.ok(slowest < firstAnswer, `each refusal at once: before any of the held requests is answered (slowest ${Math.round(slowest)} ms)`)
    // Likewise the other key: queued, it would be answered only after one of the hog's.
    t.ok(duringAnsweredAt < firstAnswer, `the other key is not held up: answered ${Math.round(during.ms)} ms after it asked (unloaded ${Math.round(unloaded)} ms), before any of the hog's held requests`)
    const sample = refused[0]?.value
    if (sample !== undefined) {
      assertProblem(t, sample, 429, 'concurrency_limited', 'a refusal')
      t.equal(sample.headers['retry-after'], '1', 'Retry-After: 1')
      t.match(sample.body, { retry_after: 1, policies: [{ name: 'fair-share', kind: 'concurrency', limit: 64, upstream: 'backoffice' }] }, 'naming the fair share')
    }
    t.equal((await ask(hog.key, '/users?per_page=1')).status, 200, 'its share is back once its requests are answered')
  })

  await t.test('a user with a token is one principal, whichever token', async (t) => {
    const gateway = await startGateway(t, { ...s.gatewaySetup, upstreams: withPool(mockUpstreams(s.upstreamUrl), 4, 0.5) })
    const tokens = [await s.login(), await s.login()]
    const slow = tokens.map(async (token) => await gateway.call(`/slow?delay_ms=${SLOW_MS}`, { bearer: token.access_token }))
    await new Promise((resolve) => setTimeout(resolve, 300))
    assertProblem(t, await gateway.call('/users?per_page=1', { bearer: tokens[0]?.access_token ?? '' }), 429, 'concurrency_limited', 'two requests of one user fill a share of 2, across two sessions')
    t.equal((await gateway.call('/users?per_page=1', { headers: { 'x-api-key': other.key } })).status, 200, 'a key is another principal')
    t.same((await Promise.all(slow)).map((a) => a.status), [200, 200])
  })

  await t.test('fairShare 1 turns it off: one key may fill the pool, and the others queue behind it', async (t) => {
    const gateway = await startGateway(t, { ...s.gatewaySetup, upstreams: withPool(mockUpstreams(s.upstreamUrl), 4, 1) })
    await gateway.call('/users?per_page=1', { headers: { 'x-api-key': other.key } })
    const hogging = Array.from({ length: 8 }, async () => await gateway.call(`/slow?delay_ms=${SLOW_MS}`, { headers: { 'x-api-key': hog.key } }))
    await new Promise((resolve) => setTimeout(resolve, 300))
    const during = await timed(async () => await gateway.call('/users?per_page=1', { headers: { 'x-api-key': other.key } }))
    t.equal(during.value.status, 200, 'served in the end')
    t.ok(during.ms > SLOW_MS / 2, `but only once the pool freed up (${Math.round(during.ms)} ms)`)
    t.same((await Promise.all(hogging)).map((a) => a.status), Array(8).fill(200), 'none of the hog\'s refused')
  })
})
