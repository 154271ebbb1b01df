import { request } from 'undici'
import type { Service } from '../processes/service.js'
import { BENCH_RATE_POLICY } from '../seed.js'
import type { BenchContext } from './context.js'
import { apiKey, staticGet } from './static-variants.js'

/** Requests of the batch that shows a limited key is let through at full concurrency. */
const CHECK_REQUESTS = 1_000

/** The RateLimit-Policy field of one keyed 7 KB answer ('' when absent), which must be a 200. */
async function rateLimitPolicyOf (ctx: BenchContext, gateway: Service, key: string): Promise<string> {
  const job = staticGet(ctx, gateway.url, '7k', apiKey(ctx, key))
  const response = await request(job.url, { method: job.method, headers: job.headers })
  await response.body.dump()
  if (response.statusCode !== 200) throw new Error(`${gateway.name}: a request with the rate-limit scenario's key answered ${response.statusCode}, not 200`)
  const field = response.headers['ratelimit-policy']
  return Array.isArray(field) ? field.join(', ') : field ?? ''
}

/**
 * Before a rate-limit scenario measures anything: the limited key's answers name its
 * policy in RateLimit-Policy (the gateway does count it), the unlimited key's name
 * none (nothing counts them), and a batch of requests with the limited key, sent at the
 * scenario's concurrency, is answered 200 every time. A 429 means the limit is not far
 * enough above the load and the scenario would measure refusals: the bench stops.
 */
export async function checkLimitedKey (ctx: BenchContext, gateway: Service, limitedKey: string, unlimitedKey?: string): Promise<void> {
  const policy = await rateLimitPolicyOf(ctx, gateway, limitedKey)
  if (!policy.includes(`"${BENCH_RATE_POLICY.name}"`)) {
    throw new Error(`${gateway.name}: the limited key's answer names no "${BENCH_RATE_POLICY.name}" policy (RateLimit-Policy: "${policy}"): its limit is not counted, the scenario would measure nothing`)
  }
  if (unlimitedKey !== undefined) {
    const unlimited = await rateLimitPolicyOf(ctx, gateway, unlimitedKey)
    if (unlimited !== '') throw new Error(`${gateway.name}: the key without limits is counted (RateLimit-Policy: "${unlimited}"): the baseline would not be a run without limits`)
  }
  const batch = await ctx.driver.run({ ...staticGet(ctx, gateway.url, '7k', apiKey(ctx, limitedKey)), amount: CHECK_REQUESTS, autocannonOnly: true })
  const refused = batch.statusCounts['429'] ?? 0
  if (refused > 0) {
    throw new Error(`${gateway.name}: ${refused} of ${batch.totalRequests} requests with the limited key were refused (429) at ${ctx.connections} connections: ` +
      `its limit (${BENCH_RATE_POLICY.limit} per ${BENCH_RATE_POLICY.window_seconds} s) is not far enough above the load, the scenario would measure refusals`)
  }
  if (Object.keys(batch.statusCounts).some((status) => status !== '200') || batch.totalRequests === 0) {
    throw new Error(`${gateway.name}: requests with the limited key answered ${JSON.stringify(batch.statusCounts)}, not only 200`)
  }
}
