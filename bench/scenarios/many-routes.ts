import { alternate } from '../rounds.js'
import type { ScenarioResult } from '../report/types.js'
import { judge, type BenchContext } from './context.js'
import { gatewayKeyVariant, headroomVariants } from './static-variants.js'

/** The same request through a gateway with 10 configured routes and one with 1 000. */
export async function manyRoutes (ctx: BenchContext): Promise<ScenarioResult> {
  const { stack, connections } = ctx
  ctx.say('10 routes vs 1 000 routes')
  const variants = await alternate(ctx.driver, [
    ...headroomVariants(ctx, '7k'),
    gatewayKeyVariant(ctx, stack.gateway, '7k', 'routes-10', 'gateway, 10 routes', 'baseline'),
    gatewayKeyVariant(ctx, stack.gatewayManyRoutes, '7k', 'routes-1000', 'gateway, 1 000 routes')
  ], ctx.rounds)
  return judge({
    id: 'many-routes',
    title: '1 000 configured routes vs 10',
    request: `GET /users?size=7k from the static upstream, API key, ${connections} connections`,
    variants,
    candidate: 'routes-1000',
    target: { description: '≥ 0.97 × the 10-route run', against: 'routes-10', minThroughputRatio: 0.97 }
  })
}
