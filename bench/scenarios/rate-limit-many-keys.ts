import { formatCount } from '../report/format.js'
import { alternate } from '../rounds.js'
import type { ScenarioResult } from '../report/types.js'
import { BENCH_RATE_POLICY } from '../seed.js'
import { staticUsersPath } from '../upstreams.js'
import { judge, type BenchContext } from './context.js'
import { checkLimitedKey } from './limited-keys.js'
import { headroomVariants } from './static-variants.js'

/**
 * Traffic over many distinct keys, each with its own per-key rate limit (so each its
 * own count in Redis), against traffic with one of them: what counting many
 * partitions costs next to counting one (plus what many keys cost the key caches,
 * which the many-keys scenario measures alone). Both sides pick a key per request the
 * same way, so the client's cost is the same.
 */
export async function rateLimitManyKeys (ctx: BenchContext): Promise<ScenarioResult> {
  const { stack, connections } = ctx
  const keys = stack.accounts.limitedTrafficKeys
  const job = (values: string[]) => ({
    url: stack.gateway.url + staticUsersPath('7k'), method: 'GET' as const, headers: {}, connections, durationSeconds: 0, rotateHeader: { name: 'x-api-key', values }
  })
  ctx.say(`warming ${keys.length.toLocaleString('en')} keys with a per-key rate limit (one identity verification each)`)
  const warm = await ctx.driver.run({ ...job(keys), amount: keys.length, rotateHeader: { name: 'x-api-key', values: keys, sequential: true } })
  if (Object.keys(warm.statusCounts).some((s) => s !== '200')) throw new Error(`warming the keys with a per-key rate limit answered ${JSON.stringify(warm.statusCounts)}`)
  await checkLimitedKey(ctx, stack.gateway, keys[0] as string)
  const variants = await alternate(ctx.driver, [
    ...headroomVariants(ctx, '7k'),
    { id: 'one-limited-key', label: 'gateway, 1 key with a limit', role: 'baseline', pid: stack.gateway.pid, job: () => job(keys.slice(0, 1)) },
    { id: 'many-limited-keys', label: `gateway, ${formatCount(keys.length)} keys, each with a limit`, role: 'candidate', pid: stack.gateway.pid, job: () => job(keys) }
  ], ctx.rounds)
  return judge({
    id: 'rate-limit-many-keys',
    title: `${formatCount(keys.length)} keys, each with its own rate limit (Redis), vs one`,
    request: `GET /users?size=7k from the static upstream, a random key of ${formatCount(keys.length)} per request, ${connections} connections`,
    variants,
    candidate: 'many-limited-keys',
    target: { description: '≥ 0.90 × the one-key limited run', against: 'one-limited-key', minThroughputRatio: 0.9 },
    notes: [`Each key has its own limit of ${BENCH_RATE_POLICY.limit} requests per ${BENCH_RATE_POLICY.window_seconds} s (see bench/seed.ts), far above the load: every request is counted in Redis, in its key's own count, none refused. The keys were verified once each before the rounds, as in the many-keys scenario.`]
  })
}
