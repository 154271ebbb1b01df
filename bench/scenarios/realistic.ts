import { alternate } from '../rounds.js'
import type { ScenarioResult } from '../report/types.js'
import { BENCH_PATH, MOCK_PREFIX } from '../upstreams.js'
import { BARE_ID, DIRECT_ID, judge, type BenchContext } from './context.js'
import { apiKey } from './static-variants.js'

/**
 * GET /users on upstream-mock, which builds a 50-user page per request: direct, the
 * bare proxy and the gateway with an API key. What a client of a real back office
 * sees; the mock sets the pace, so nothing here is judged.
 */
export async function realistic (ctx: BenchContext): Promise<ScenarioResult> {
  const { stack, connections } = ctx
  const get = (url: string, headers: Record<string, string> = {}) => ({ url, method: 'GET' as const, headers, connections, durationSeconds: 0 })
  ctx.say('realistic upstream: GET /users on upstream-mock')
  const variants = await alternate(ctx.driver, [
    { id: DIRECT_ID, label: 'direct to upstream-mock', role: 'reference', job: () => get(stack.mock.url + BENCH_PATH) },
    { id: BARE_ID, label: 'bare proxy (Fastify + @fastify/http-proxy)', role: 'baseline', pid: stack.bareToMock.pid, job: () => get(stack.bareToMock.url + BENCH_PATH) },
    { id: 'gateway-key', label: 'gateway, API key', role: 'candidate', pid: stack.gateway.pid, job: () => get(stack.gateway.url + MOCK_PREFIX + BENCH_PATH, apiKey(ctx)) }
  ], ctx.rounds)
  return judge({
    id: 'realistic-api-key',
    title: 'upstream-mock GET /users, API key',
    request: `GET /users on upstream-mock (a 50-user page built per request), ${connections} connections`,
    variants,
    candidate: 'gateway-key',
    target: { description: 'reported (the mock is the bottleneck)', against: BARE_ID }
  })
}
