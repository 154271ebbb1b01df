import { alternate } from '../rounds.js'
import type { ScenarioResult } from '../report/types.js'
import { BENCH_PATH } from '../upstreams.js'
import { judge, type BenchContext } from './context.js'

/** The same request through a gateway with 10 configured routes and one with 1 000. */
export async function manyRoutes (ctx: BenchContext): Promise<ScenarioResult> {
  const { stack, connections } = ctx
  const job = (url: string) => ({ url: url + BENCH_PATH, method: 'GET' as const, headers: { 'x-api-key': stack.accounts.apiKey }, connections, durationSeconds: 0 })
  ctx.say('10 routes vs 1 000 routes')
  const variants = await alternate(ctx.driver, [
    { id: 'routes-10', label: 'gateway, 10 routes', role: 'baseline', pid: stack.gateway.pid, job: () => job(stack.gateway.url) },
    { id: 'routes-1000', label: 'gateway, 1 000 routes', role: 'candidate', pid: stack.gatewayManyRoutes.pid, job: () => job(stack.gatewayManyRoutes.url) }
  ], ctx.rounds)
  return judge({
    id: 'many-routes',
    title: '1 000 configured routes vs 10',
    request: `GET ${BENCH_PATH}, API key, ${connections} connections`,
    variants,
    candidate: 'routes-1000',
    target: { description: '≥ 0.95 × the 10-route run', against: 'routes-10', minThroughputRatio: 0.95 }
  })
}
