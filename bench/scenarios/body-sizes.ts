import { alternate, withFloorRatios } from '../rounds.js'
import type { ScenarioResult } from '../report/types.js'
import type { PageSize } from '../static-upstream/pages.js'
import { BARE_ID, FLOOR_ID, judge, type BenchContext } from './context.js'
import { PAGE_LABELS, floorVariant, gatewayKeyVariant, headroomVariants } from './static-variants.js'

/**
 * The API key run on a small and a large body, each in its own rotation with its own
 * references: a small body weighs the per-request costs (authentication, routing,
 * logging), a large one the per-byte costs of moving the body through.
 */
export async function bodySizes (ctx: BenchContext, sizes: PageSize[] = ['1k', '30k']): Promise<ScenarioResult[]> {
  const results: ScenarioResult[] = []
  for (const size of sizes) {
    ctx.say(`GET /users, ${PAGE_LABELS[size]}: direct, bare, floor, gateway with an API key`)
    const specs = [...headroomVariants(ctx, size), floorVariant(ctx, size), gatewayKeyVariant(ctx, ctx.stack.gateway, size, 'gateway-key', 'gateway, API key')]
    const variants = withFloorRatios(await alternate(ctx.driver, specs, ctx.rounds), FLOOR_ID)
    results.push(judge({
      id: `api-key-${size}`,
      title: `GET /users ${PAGE_LABELS[size]}, API key, warm cache`,
      request: `GET /users?size=${size} from the static upstream, ${ctx.connections} connections`,
      variants,
      candidate: 'gateway-key',
      target: { description: '≥ 0.90 × bare proxy', against: BARE_ID, minThroughputRatio: 0.9 }
    }))
  }
  return results
}
