import t from 'tap'
import { startGateway, startStack } from '../../helpers/gateway.js'
import { parseFieldList, rate, upstreamsWithPolicies } from '../../helpers/traffic.js'

const READ = ['users:list', 'users:read', 'tasks:list', 'debug:read']

for (const store of ['redis', 'in-process'] as const) {
  t.test(`policies declared in the upstreams file (${store} counts)`, async (t) => {
    const stack = await startStack(t, { checkLookups: false })
    const upstreams = upstreamsWithPolicies(stack.upstreamUrl, {
      upstream: [rate('backoffice', 1000, 60)],
      routes: {
        'GET /users': { policies: [rate('users-burst', 5, 30)] },
        'GET /tasks': { policies: [rate('tasks-key', 3, 30), rate('tasks-shared', 4, 30, 'route')] },
        'GET /users/:id': { policies: [rate('heavy', 10, 30)], cost: 4 }
      }
    })
    const setup = store === 'redis' ? stack.gatewaySetup : { identity: stack.gatewaySetup.identity, clock: stack.gatewaySetup.clock }
    const gateway = await startGateway(t, { ...setup, upstreams })
    const a = await stack.createKey(READ)
    const b = await stack.createKey(READ)
    const as = (key: string) => ({ headers: { 'x-api-key': key } })

    t.test('a per-key rate limit: exactly the limit passes, then 429 with Retry-After and the policies', async (t) => {
      const statuses: number[] = []
      const remaining: number[] = []
      for (let i = 0; i < 5; i++) {
        const answer = await gateway.call('/users?per_page=1', as(a.key))
        statuses.push(answer.status)
        const fields = parseFieldList(answer.headers.ratelimit)
        remaining.push(fields.get('users-burst')?.r ?? -1)
        const policy = parseFieldList(answer.headers['ratelimit-policy'])
        t.same(policy.get('users-burst'), { q: 5, w: 30 }, 'RateLimit-Policy names the route policy with its quota and window')
        t.same(policy.get('backoffice'), { q: 1000, w: 60 }, 'and the upstream policy')
      }
      t.same(statuses, [200, 200, 200, 200, 200])
      t.same(remaining, [4, 3, 2, 1, 0], 'RateLimit r counts down to 0')
      const refused = await gateway.call('/users?per_page=1', as(a.key))
      t.equal(refused.status, 429)
      t.match(refused.headers['content-type'], /^application\/problem\+json/)
      t.equal(refused.body.code, 'rate_limited')
      const retryAfter = Number(refused.headers['retry-after'])
      t.ok(retryAfter >= 1 && retryAfter <= 30, `Retry-After ${retryAfter} is within the window`)
      t.equal(refused.body.retry_after, retryAfter)
      t.same(refused.body.policies, [{ name: 'users-burst', kind: 'rate', limit: 5, window_seconds: 30, partition: 'key', retry_after: retryAfter }],
        'the problem names the one policy broken, never whose count it was')
      t.notOk(refused.text.includes(a.id), 'no key id in the refusal')
      t.equal(parseFieldList(refused.headers.ratelimit).get('users-burst')?.r, 0, 'the 429 carries the RateLimit fields too')
      t.equal((await gateway.call('/users?per_page=1', as(b.key))).status, 200, 'another key has a count of its own')
      t.equal((await gateway.call('/users/1', as(a.key))).status, 200, 'another route of the same key is not limited by it')
    })

    t.test('a per-route policy is shared by every caller; a request its own count refuses takes nothing from it', async (t) => {
      const c = await stack.createKey(READ)
      const d = await stack.createKey(READ)
      const first = []
      for (let i = 0; i < 5; i++) first.push((await gateway.call('/tasks', as(c.key))).status)
      t.same(first, [200, 200, 200, 429, 429], 'tasks-key (3 per key) refuses c after 3')
      const second = [(await gateway.call('/tasks', as(d.key))), (await gateway.call('/tasks', as(d.key)))]
      t.same(second.map((answer) => answer.status), [200, 429], 'the route count (4 for all) had 1 left: c\'s refused requests took none of it')
      t.same(second[1]?.body.policies.map((p: { name: string }) => p.name), ['tasks-shared'], 'd was refused by the shared policy only')
    })

    t.test('a route cost takes that many units', async (t) => {
      const statuses = []
      for (let i = 0; i < 3; i++) statuses.push((await gateway.call('/users/2', as(b.key))).status)
      t.same(statuses, [200, 200, 429], 'limit 10, cost 4: two requests fit, the third needs 4 of the 2 left')
      const fields = parseFieldList((await gateway.call('/users?per_page=1', as(b.key))).headers.ratelimit)
      t.equal(fields.get('backoffice')?.r, 1000 - 1 - 4 - 4 - 1, 'the upstream policy took the cost of each request let through (4 each), 1 for others')
    })

    t.test('metrics count allowed and limited requests per policy, never whose', async (t) => {
      const text = await (await fetch(`${gateway.metricsUrl}/metrics`)).text()
      const series = (outcome: string) => new RegExp(`portier_gateway_traffic_decisions_total\\{policy="users-burst",source="route:GET:/users",kind="rate",outcome="${outcome}"\\} (\\d+)`).exec(text)?.[1]
      t.equal(series('allowed'), '7', 'five of a, two of b let through')
      t.equal(series('limited'), '1', 'one refused')
      t.match(text, /portier_gateway_traffic_decisions_total\{policy="tasks-shared",source="route:GET:\/tasks",kind="rate",outcome="limited"\} 1/)
      for (const id of [a.id, b.id]) t.notOk(text.includes(id), 'no key id in any label')
      t.notOk(/127\.0\.0\.1|k:|u:|ip:/.test(text.split('\n').filter((line) => line.startsWith('portier_gateway_traffic')).join('\n')), 'no partition name in any label')
    })

    t.test('the OpenAPI document states each route\'s policies and cost', async (t) => {
      const document = (await gateway.call('/openapi.json')).body
      t.match(document.paths['/users'].get.description, /`backoffice` \(rate, 1000 per 60 s, per key\), `users-burst` \(rate, 5 per 30 s, per key\)/)
      t.match(document.paths['/users/{id}'].get.description, /each request costs 4 units/)
      t.match(document.paths['/users'].get.responses['429'], { $ref: '#/components/responses/TooManyRequests' })
    })

    t.test('routes without policies answer without RateLimit fields', async (t) => {
      const plain = await startGateway(t, { ...setup, upstreams: upstreamsWithPolicies(stack.upstreamUrl, {}), options: { anonymousPolicies: [] } })
      const answer = await plain.call('/users?per_page=1', as(a.key))
      t.equal(answer.status, 200)
      t.equal(answer.headers.ratelimit, undefined)
      t.equal(answer.headers['ratelimit-policy'], undefined)
    })
  })
}
