import { formatCount } from '../report/format.js'
import { alternate } from '../rounds.js'
import type { ScenarioResult } from '../report/types.js'
import { staticUsersPath } from '../upstreams.js'
import { judge, type BenchContext } from './context.js'
import { headroomVariants } from './static-variants.js'

/**
 * Traffic over many distinct keys (more than the gateway's L1 holds) against traffic
 * with one: what L1 misses cost once the keys sit in Redis (L2). Both sides pick a
 * key per request the same way, so the client's cost is the same.
 */
export async function manyKeys (ctx: BenchContext, settings: { keysInIdentity: number }): Promise<ScenarioResult> {
  const { stack, connections } = ctx
  const keys = stack.accounts.trafficKeys
  const job = (values: string[]) => ({
    url: stack.gateway.url + staticUsersPath('7k'), method: 'GET' as const, headers: {}, connections, durationSeconds: 0, rotateHeader: { name: 'x-api-key', values }
  })
  ctx.say(`warming L2 with ${keys.length.toLocaleString('en')} distinct keys (one identity verification each)`)
  const warm = await ctx.driver.run({ ...job(keys), amount: keys.length, rotateHeader: { name: 'x-api-key', values: keys, sequential: true } })
  if (Object.keys(warm.statusCounts).some((s) => s !== '200')) throw new Error(`warming the keys answered ${JSON.stringify(warm.statusCounts)}`)
  const variants = await alternate(ctx.driver, [
    ...headroomVariants(ctx, '7k'),
    { id: 'one-key', label: 'gateway, 1 key', role: 'baseline', pid: stack.gateway.pid, job: () => job(keys.slice(0, 1)) },
    { id: 'many-keys', label: `gateway, ${formatCount(keys.length)} keys`, role: 'candidate', pid: stack.gateway.pid, job: () => job(keys) }
  ], ctx.rounds)
  return judge({
    id: 'many-keys',
    title: `${formatCount(settings.keysInIdentity)} keys in identity, ${formatCount(keys.length)} in traffic`,
    request: `GET /users?size=7k from the static upstream, a random key of ${formatCount(keys.length)} per request, ${connections} connections`,
    variants,
    candidate: 'many-keys',
    target: { description: '≥ 0.90 × the one-key run', against: 'one-key', minThroughputRatio: 0.9 },
    notes: ['The many keys share one secret and differ by lookup id (see bench/seed.ts); after the warm-up every verification comes from L1 or Redis.']
  })
}
