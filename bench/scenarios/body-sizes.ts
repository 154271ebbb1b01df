import { alternate, withFloorRatios } from '../rounds.js'
import type { ScenarioResult } from '../report/types.js'
import type { PageSize } from '../static-upstream/pages.js'
import { BARE_ID, DIRECT_ID, FLOOR_ID, judge, type BenchContext } from './context.js'
import { PAGE_LABELS, camelTarget, floorVariant, gatewayCamelVariant, gatewayKeyVariant, headroomVariants } from './static-variants.js'

/**
 * The API key run on a small and a large body, each in its own rotation with its own
 * references: a small body weighs the per-request costs (authentication, routing,
 * logging), a large one the per-byte costs of moving the body through. Sizes in
 * `camelSizes` also run camel inflection in the same rotation: renaming is a per-byte
 * cost, judged by camelTarget (the 7 KB camel run is proxy-overhead's).
 */
export async function bodySizes (ctx: BenchContext, sizes: PageSize[] = ['1k', '30k'], camelSizes: PageSize[] = ['30k']): Promise<ScenarioResult[]> {
  const results: ScenarioResult[] = []
  for (const size of sizes) {
    const camel = camelSizes.includes(size) ? camelTarget(size) : undefined
    ctx.say(`GET /users, ${PAGE_LABELS[size]}: direct, bare, floor, gateway with an API key${camel !== undefined ? ', and with camel inflection' : ''}`)
    const specs = [
      ...headroomVariants(ctx, size),
      floorVariant(ctx, size),
      gatewayKeyVariant(ctx, ctx.stack.gateway, size, 'gateway-key', 'gateway, API key'),
      ...(camel !== undefined ? [gatewayCamelVariant(ctx, size)] : [])
    ]
    const variants = withFloorRatios(await alternate(ctx.driver, specs, ctx.rounds), FLOOR_ID)
    const pick = (id: string) => variants.filter((v) => [DIRECT_ID, FLOOR_ID, BARE_ID, id].includes(v.id))
    const request = `GET /users?size=${size} from the static upstream, ${ctx.connections} connections`
    results.push(judge({
      id: `api-key-${size}`,
      title: `GET /users ${PAGE_LABELS[size]}, API key, warm cache`,
      request,
      variants: pick('gateway-key'),
      candidate: 'gateway-key',
      target: { description: '≥ 0.90 × bare proxy', against: BARE_ID, minThroughputRatio: 0.9 }
    }))
    if (camel !== undefined) {
      results.push(judge({
        id: `camel-${size}`,
        title: `GET /users ${PAGE_LABELS[size]}, camel inflection`,
        request,
        variants: pick('gateway-camel'),
        candidate: 'gateway-camel',
        target: camel
      }))
    }
  }
  return results
}
