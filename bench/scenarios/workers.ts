import type { ScenarioResult } from '../report/types.js'
import type { BenchContext } from './context.js'
import { compareGateways } from './static-variants.js'

/**
 * A gateway started with GATEWAY_WORKERS=2 against the one-process gateway. Reported
 * without a target: on 2 cores the second worker competes with the load generator
 * and the upstream for the same cores. Its CPU and memory are of the process tree.
 */
export async function workers (ctx: BenchContext): Promise<ScenarioResult> {
  ctx.say('gateway, 2 workers vs 1 worker')
  return await compareGateways(ctx, {
    id: 'workers',
    title: 'gateway, 2 workers vs 1 worker',
    baseline: { gateway: ctx.stack.gateway, id: 'workers-1', label: 'gateway, 1 worker' },
    candidate: { gateway: ctx.stack.gatewayTwoWorkers, id: 'workers-2', label: 'gateway, GATEWAY_WORKERS=2' },
    target: { description: 'reported (no target)', against: 'workers-1' },
    notes: ['The load generator, the upstream and every worker share the machine\'s cores: a second worker helps only as far as a core is idle (on 2 cores, hardly).']
  })
}
