import t from 'tap'
import { startGateway, startStack, type TestGateway } from '../../helpers/gateway.js'
import { startRedisCluster } from '../../helpers/redis-cluster.js'
import { seededRandom } from '../../helpers/seeded-random.js'
import { rate, upstreamsWithPolicies } from '../../helpers/traffic.js'

/**
 * Two gateway replicas on one Redis share one count: with a limit of 100 per 10 s,
 * 100 (at most 101) of any number of requests sent within the window pass, however
 * the requests are spread over the replicas and however many are in flight at once.
 */
for (const redis of ['a standalone Redis', 'a Redis Cluster of three masters'] as const) {
  t.test(`a limit is exact across two replicas on ${redis}`, async (t) => {
    const stack = await startStack(t, { checkLookups: false })
    const upstreams = upstreamsWithPolicies(stack.upstreamUrl, { routes: { 'GET /users': { policies: [rate('hundred', 100, 10)] } } })
    const cluster = redis === 'a standalone Redis' ? null : await startRedisCluster(t)
    const setup = cluster === null
      ? { ...stack.gatewaySetup, upstreams }
      : { identity: stack.gatewaySetup.identity, clock: stack.gatewaySetup.clock, upstreams, options: { redisClusterNodes: cluster.nodes } }
    const replicas = [await startGateway(t, setup), await startGateway(t, setup)]
    const random = seededRandom(17)

    async function flood (key: string, share: number, requests: number, inFlight: number): Promise<number> {
      let next = 0
      let allowed = 0
      const statuses = new Set<number>()
      const worker = async (): Promise<void> => {
        while (next < requests) {
          next++
          const replica = (random() < share ? replicas[0] : replicas[1]) as TestGateway
          const answer = await replica.call('/users?per_page=1', { headers: { 'x-api-key': key } })
          statuses.add(answer.status)
          if (answer.status === 200) allowed++
        }
      }
      await Promise.all(Array.from({ length: inFlight }, worker))
      t.same([...statuses].sort(), [200, 429], 'only 200 and 429')
      return allowed
    }

    for (const [share, inFlight] of [[0.5, 16], [0.9, 16], [1, 8], [0.5, 1]] as const) {
      const { key } = await stack.createKey(['users:list'])
      const started = Date.now()
      const allowed = await flood(key, share, 300, inFlight)
      const elapsed = Date.now() - started
      t.ok(elapsed < 10_000, `the 300 requests fit in one window (${elapsed} ms)`)
      t.ok(allowed >= 100 && allowed <= 101, `${Math.round(share * 100)} % to the first replica, ${inFlight} in flight: ${allowed} allowed (100 to 101)`)
    }
    if (cluster !== null) {
      const perNode = await cluster.countOnEachNode('portier:tc:*')
      t.ok(perNode.filter((n) => (n ?? 0) > 0).length >= 2, `the counts of the four keys spread over the masters (${JSON.stringify(perNode)})`)
    }
  })
}
