import { alternate, type VariantSpec } from '../rounds.js'
import type { ScenarioResult } from '../report/types.js'
import { BARE_ID, DIRECT_ID, judge, type BenchContext } from './context.js'
import { gatewayKeyVariant, headroomVariants } from './static-variants.js'

const OFF_ID = 'gateway-key'
const EVERYTHING_ID = 'gateway-tracing-100'
/** A black-holed collector may cost requests at most this share of their p99 with a healthy one. */
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
    gatewayKeyVariant(ctx, traced.everything, '7k', EVERYTHING_ID, 'gateway, API key, 100 % sampled'),
    gatewayKeyVariant(ctx, traced.blackHoled, '7k', 'gateway-tracing-black-hole', 'gateway, API key, 100 % sampled, black-holed collector')
  ]
  ctx.say(`GET /users, 7 KB, traced: ${specs.map((s) => s.id).join(', ')}`)
  const variants = await alternate(ctx.driver, specs, ctx.rounds)
  const pick = (...ids: string[]) => variants.filter((v) => [DIRECT_ID, BARE_ID, OFF_ID, ...ids].includes(v.id))
  const request = `GET /users?size=7k (50-user page, 7 KB) from the static upstream, API key, ${connections} connections`
  const p99Of = (id: string): number => variants.find((v) => v.id === id)?.median.p99Ms ?? NaN
  const healthyP99 = p99Of(EVERYTHING_ID)
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
      variants: pick(EVERYTHING_ID),
      candidate: EVERYTHING_ID,
      target: { description: '≥ 0.75 × tracing off', against: OFF_ID, minThroughputRatio: 0.75 }
    }),
    judge({
      id: 'tracing-black-hole',
      title: 'GET /users 7 KB, API key, tracing 100 %, black-holed collector',
      request,
      variants: pick(EVERYTHING_ID, 'gateway-tracing-black-hole'),
      candidate: 'gateway-tracing-black-hole',
      // What the collector's state costs, so against the same sampling with a healthy
      // collector: tracing's own cost is the 100 % row's, and would be counted twice
      // against tracing off. The allowance is 5 % of this run's healthy p99.
      target: { description: 'p99 ≤ 1.05 × p99 with a healthy collector', against: EVERYTHING_ID, maxP99ExcessMs: BLACK_HOLE_P99_SHARE * healthyP99 },
      notes: [`Tracing off is shown for reference (p99 ${p99Of(OFF_ID).toFixed(2)} ms, black-holed ${p99Of('gateway-tracing-black-hole').toFixed(2)} ms): the 100 % row judges what tracing itself costs.`]
    })
  ]
}
