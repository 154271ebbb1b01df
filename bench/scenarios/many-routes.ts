import type { ScenarioResult } from '../report/types.js'
import type { BenchContext } from './context.js'
import { compareGateways } from './static-variants.js'

/** The same request through a gateway with 10 configured routes and one with 1 000. */
export async function manyRoutes (ctx: BenchContext): Promise<ScenarioResult> {
  ctx.say('10 routes vs 1 000 routes')
  return await compareGateways(ctx, {
    id: 'many-routes',
    title: '1 000 configured routes vs 10',
    baseline: { gateway: ctx.stack.gateway, id: 'routes-10', label: 'gateway, 10 routes' },
    candidate: { gateway: ctx.stack.gatewayManyRoutes, id: 'routes-1000', label: 'gateway, 1 000 routes' },
    target: { description: '≥ 0.97 × the 10-route run', against: 'routes-10', minThroughputRatio: 0.97 }
  })
}
