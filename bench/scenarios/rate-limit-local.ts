import type { ScenarioResult } from '../report/types.js'
import { BENCH_RATE_POLICY } from '../seed.js'
import type { BenchContext } from './context.js'
import { checkLimitedKey } from './limited-keys.js'
import { compareKeys } from './static-variants.js'

/**
 * The gateway without Redis, the same request with the bench's key (no policies) and
 * with a key holding a per-key rate limit far above the load: what counting every
 * request in process costs, never a refusal.
 */
export async function rateLimitLocal (ctx: BenchContext): Promise<ScenarioResult> {
  const { stack } = ctx
  const gateway = stack.gatewayWithoutRedis
  ctx.say('gateway without Redis: a key with a per-key rate limit vs a key without limits')
  await checkLimitedKey(ctx, gateway, stack.accounts.limitedApiKey, stack.accounts.apiKey)
  return await compareKeys(ctx, {
    id: 'rate-limit-local',
    title: 'per-key rate limit, counted in process, vs no limit',
    gateway,
    baseline: { key: stack.accounts.apiKey, id: 'key-no-limit', label: 'gateway without Redis, key without limits' },
    candidate: { key: stack.accounts.limitedApiKey, id: 'key-limit-local', label: 'gateway without Redis, key with a per-key limit (in process)' },
    target: { description: '≥ 0.97 × the same run without limits', against: 'key-no-limit', minThroughputRatio: 0.97 },
    notes: [`A gateway started without Redis (counts, key cache and events in process). The key's limit, ${BENCH_RATE_POLICY.limit} requests per ${BENCH_RATE_POLICY.window_seconds} s, is far above the load: every request is counted, none refused.`]
  })
}
