import { alternate } from '../rounds.js'
import type { ScenarioResult } from '../report/types.js'
import { judge, type BenchContext } from './context.js'
import { gatewayKeyVariant, headroomVariants } from './static-variants.js'

/**
 * A gateway started with GATEWAY_WORKERS=2 against the one-process gateway. Reported
 * without a target: on 2 cores the second worker competes with the load generator
 * and the upstream for the same cores. Its CPU and memory are of the process tree.
 */
export async function workers (ctx: BenchContext): Promise<ScenarioResult> {
  const { stack, connections } = ctx
  ctx.say('gateway, 2 workers vs 1 worker')
  const variants = await alternate(ctx.driver, [
    ...headroomVariants(ctx, '7k'),
    gatewayKeyVariant(ctx, stack.gateway, '7k', 'workers-1', 'gateway, 1 worker', 'baseline'),
    gatewayKeyVariant(ctx, stack.gatewayTwoWorkers, '7k', 'workers-2', 'gateway, GATEWAY_WORKERS=2')
  ], ctx.rounds)
  return judge({
    id: 'workers',
    title: 'gateway, 2 workers vs 1 worker',
    request: `GET /users?size=7k from the static upstream, API key, ${connections} connections`,
    variants,
    candidate: 'workers-2',
    target: { description: 'reported (no target)', against: 'workers-1' },
    notes: ['The load generator, the upstream and every worker share the machine\'s cores: a second worker helps only as far as a core is idle (on 2 cores, hardly).']
  })
}
