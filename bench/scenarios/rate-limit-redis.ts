import type { ScenarioResult } from '../report/types.js'
import { BENCH_RATE_POLICY } from '../seed.js'
import type { BenchContext } from './context.js'
import { checkLimitedKey } from './limited-keys.js'
import { compareKeys } from './static-variants.js'

/**
 * The gateway on Redis, the same request with the bench's key (no policies) and with a
 * key holding a per-key rate limit far above the load: what counting every request in
 * Redis (one script call) costs, never a refusal.
 */
export async function rateLimitRedis (ctx: BenchContext): Promise<ScenarioResult> {
  const { stack } = ctx
  ctx.say('gateway on Redis: a key with a per-key rate limit vs a key without limits')
  await checkLimitedKey(ctx, stack.gateway, stack.accounts.limitedApiKey, stack.accounts.apiKey)
  return await compareKeys(ctx, {
    id: 'rate-limit-redis',
    title: 'per-key rate limit, counted in Redis, vs no limit',
    gateway: stack.gateway,
    baseline: { key: stack.accounts.apiKey, id: 'key-no-limit', label: 'gateway, key without limits' },
    candidate: { key: stack.accounts.limitedApiKey, id: 'key-limit-redis', label: 'gateway, key with a per-key limit (Redis)' },
    target: { description: '≥ 0.90 × the same run without limits', against: 'key-no-limit', minThroughputRatio: 0.9 },
    notes: [`The key's limit, ${BENCH_RATE_POLICY.limit} requests per ${BENCH_RATE_POLICY.window_seconds} s, is far above the load: every request is counted in Redis, none refused.`]
  })
}
