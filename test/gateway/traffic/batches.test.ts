import t from 'tap'
import { Redis } from 'ioredis'
import { startStack } from '../../helpers/gateway.js'

/** Under a large limit, most requests are counted from the gateway's batch: few script calls reach Redis. */
t.test('a key with a limit of 100 000 a second: about one Redis call per hundred requests', async (t) => {
  const stack = await startStack(t, { checkLookups: false })
  const raw = new Redis(stack.redis.url)
  t.teardown(() => { raw.disconnect() })
  const scripts = async (): Promise<number> => {
    const stats = await raw.info('commandstats')
    return Number(/cmdstat_evalsha:calls=(\d+)/.exec(stats)?.[1] ?? 0) + Number(/cmdstat_eval:calls=(\d+)/.exec(stats)?.[1] ?? 0)
  }
  const { key } = await stack.createKey(['users:list'], { policies: [{ name: 'big', kind: 'rate', limit: 100_000, window_seconds: 1, partition: 'key' }] })
  await stack.gateway.call('/users?per_page=1', { headers: { 'x-api-key': key } })
  const before = await scripts()
  let next = 0
  const statuses: number[] = []
  await Promise.all(Array.from({ length: 10 }, async () => {
    while (next < 1_000) {
      next++
      statuses.push((await stack.gateway.call('/users?per_page=1', { headers: { 'x-api-key': key } })).status)
    }
  }))
  const calls = await scripts() - before
  t.same([...new Set(statuses)], [200], 'every request passes')
  t.ok(calls < 100, `1 000 requests made ${calls} script calls`)
})
