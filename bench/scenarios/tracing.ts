import { alternate, type VariantSpec } from '../rounds.js'
import type { ScenarioResult } from '../report/types.js'
import { BARE_ID, DIRECT_ID, judge, type BenchContext } from './context.js'
import { gatewayKeyVariant, headroomVariants } from './static-variants.js'

const OFF_ID = 'gateway-key'
/** A black-holed collector may cost requests at most this share of their p99. */
const BLACK_HOLE_P99_SHARE = 0.05

/**
 * What tracing costs the API key request of the proxy-overhead scenario (GET /users,
 * 7 KB, warm cache): the same gateway with tracing off, sampling 10 % and 100 % of new
 * traces to a collector that takes and discards every export, and sampling 100 % to a
 * collector that never answers, in one rotation.
 */
export async function tracingCost (ctx: BenchContext): Promise<ScenarioResult[]> {
  const { stack, connections } = ctx
  const traced = stack.gatewayTracing
  const specs: VariantSpec[] = [
    ...headroomVariants(ctx, '7k'),
    gatewayKeyVariant(ctx, stack.gateway, '7k', OFF_ID, 'gateway, API key, tracing off', 'baseline'),
    gatewayKeyVariant(ctx, traced.tenPercent, '7k', 'gateway-tracing-10', 'gateway, API key, 10 % sampled'),
    gatewayKeyVariant(ctx, traced.everything, '7k', 'gateway-tracing-100', 'gateway, API key, 100 % sampled'),
    gatewayKeyVariant(ctx, traced.blackHoled, '7k', 'gateway-tracing-black-hole', 'gateway, API key, 100 % sampled, black-holed collector')
  ]
  ctx.say(`GET /users, 7 KB, traced: ${specs.map((s) => s.id).join(', ')}`)
  const variants = await alternate(ctx.driver, specs, ctx.rounds)
  const pick = (id: string) => variants.filter((v) => [DIRECT_ID, BARE_ID, OFF_ID, id].includes(v.id))
  const request = `GET /users?size=7k (50-user page, 7 KB) from the static upstream, API key, ${connections} connections`
  const offP99 = variants.find((v) => v.id === OFF_ID)?.median.p99Ms ?? NaN
  return [
    judge({
      id: 'tracing-10',
      title: 'GET /users 7 KB, API key, tracing 10 %',
      request,
      variants: pick('gateway-tracing-10'),
      candidate: 'gateway-tracing-10',
      target: { description: '≥ 0.90 × tracing off', against: OFF_ID, minThroughputRatio: 0.9 }
    }),
    judge({
      id: 'tracing-100',
      title: 'GET /users 7 KB, API key, tracing 100 %',
      request,
      variants: pick('gateway-tracing-100'),
      candidate: 'gateway-tracing-100',
      target: { description: '≥ 0.75 × tracing off', against: OFF_ID, minThroughputRatio: 0.75 }
    }),
    judge({
      id: 'tracing-black-hole',
      title: 'GET /users 7 KB, API key, tracing 100 %, black-holed collector',
      request,
      variants: pick('gateway-tracing-black-hole'),
      candidate: 'gateway-tracing-black-hole',
      // Relative to this run's p99 with tracing off: the allowance is 5 % of it.
      target: { description: 'p99 ≤ 1.05 × tracing off p99', against: OFF_ID, maxP99ExcessMs: BLACK_HOLE_P99_SHARE * offP99 }
    })
  ]
}
