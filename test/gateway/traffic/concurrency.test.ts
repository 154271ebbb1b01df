import t from 'tap'
import { startGateway, startStack } from '../../helpers/gateway.js'
import { upstreamsWithPolicies } from '../../helpers/traffic.js'

/**
 * A concurrency cap per key: a key flooding a slow upstream gets 429 at once for every
 * request beyond its cap, instead of queueing behind the upstream; another key's
 * requests stay fast meanwhile, and the slots come back when answers are over.
 */
t.test('a per-key concurrency cap keeps a flood from queueing in front of others', async (t) => {
  const stack = await startStack(t, { checkLookups: false })
  const upstreams = upstreamsWithPolicies(stack.upstreamUrl, {
    upstream: [{ name: 'inflight', kind: 'concurrency', limit: 3, partition: 'key' }]
  })
  const gateway = await startGateway(t, { ...stack.gatewaySetup, upstreams })
  const flooder = await stack.createKey(['debug:read', 'users:list'])
  const other = await stack.createKey(['debug:read', 'users:list'])
  const as = (key: string) => ({ headers: { 'x-api-key': key } })

  const started = Date.now()
  const flood = Array.from({ length: 40 }, async () => {
    const answer = await gateway.call('/slow?delay_ms=1500', as(flooder.key))
    return { status: answer.status, ms: Date.now() - started, body: answer.body, retryAfter: answer.headers['retry-after'] }
  })
  // While the three admitted requests wait on the slow upstream, the other key is answered at once.
  await new Promise((resolve) => setTimeout(resolve, 200))
  const otherTimes: number[] = []
  for (let i = 0; i < 5; i++) {
    const before = Date.now()
    const answer = await gateway.call('/users?per_page=1', as(other.key))
    t.equal(answer.status, 200, 'the other key is served')
    otherTimes.push(Date.now() - before)
  }
  t.ok(Math.max(...otherTimes) < 500, `the other key's answers stay fast (${otherTimes.join(', ')} ms)`)
  const results = await Promise.all(flood)
  const admitted = results.filter((r) => r.status === 200)
  const refused = results.filter((r) => r.status === 429)
  t.equal(admitted.length, 3, 'exactly the cap is admitted')
  t.equal(refused.length, 37, 'the rest is refused')
  t.ok(refused.every((r) => r.ms < 1000), 'refusals come at once, not after the upstream answered')
  t.ok(admitted.every((r) => r.ms >= 1400), 'the admitted ones waited on the upstream')
  t.equal(refused[0]?.body.code, 'concurrency_limited')
  t.equal(refused[0]?.retryAfter, '1')
  t.same(refused[0]?.body.policies, [{ name: 'inflight', kind: 'concurrency', limit: 3, partition: 'key', retry_after: 1 }])
  // The slots were given back when the answers ended (and on a client that went away).
  const again = await Promise.all(Array.from({ length: 3 }, async () => (await gateway.call('/slow?delay_ms=10', as(flooder.key))).status))
  t.same(again, [200, 200, 200], 'the cap is free again once the answers are over')
})

t.test('a client that hangs up gives its slot back', async (t) => {
  const stack = await startStack(t, { checkLookups: false })
  const upstreams = upstreamsWithPolicies(stack.upstreamUrl, {
    upstream: [{ name: 'one-at-a-time', kind: 'concurrency', limit: 1, partition: 'key' }]
  })
  const gateway = await startGateway(t, { ...stack.gatewaySetup, upstreams })
  const { key } = await stack.createKey(['debug:read'])
  const controller = new AbortController()
  const hung = fetch(`${gateway.url}/slow?delay_ms=5000`, { headers: { 'x-api-key': key }, signal: controller.signal }).catch(() => 'aborted')
  await new Promise((resolve) => setTimeout(resolve, 200))
  t.equal((await gateway.call('/slow?delay_ms=1', { headers: { 'x-api-key': key } })).status, 429, 'the slot is held while the first request runs')
  controller.abort()
  t.equal(await hung, 'aborted')
  await new Promise((resolve) => setTimeout(resolve, 100))
  t.equal((await gateway.call('/slow?delay_ms=1', { headers: { 'x-api-key': key } })).status, 200, 'the client that hung up gave its slot back')
})

t.test('a per-upstream concurrency cap is shared by every caller of the upstream', async (t) => {
  const stack = await startStack(t, { checkLookups: false })
  const upstreams = upstreamsWithPolicies(stack.upstreamUrl, {
    upstream: [{ name: 'pool', kind: 'concurrency', limit: 2, partition: 'upstream' }]
  })
  const gateway = await startGateway(t, { ...stack.gatewaySetup, upstreams })
  const keys = await Promise.all(Array.from({ length: 4 }, async () => await stack.createKey(['debug:read'])))
  const started = Date.now()
  const answers = await Promise.all(keys.map(async ({ key }) => {
    const answer = await gateway.call('/slow?delay_ms=1000', { headers: { 'x-api-key': key } })
    return { status: answer.status, ms: Date.now() - started, body: answer.body }
  }))
  t.equal(answers.filter((a) => a.status === 200).length, 2, 'two requests in flight in all, whichever keys send them')
  const refused = answers.filter((a) => a.status === 429)
  t.equal(refused.length, 2)
  t.ok(refused.every((a) => a.ms < 800), 'the others are refused at once')
  t.same(refused[0]?.body.policies, [{ name: 'pool', kind: 'concurrency', limit: 2, partition: 'upstream', retry_after: 1 }])
})
