import t from 'tap'
import { judge } from '../../bench/scenarios/context.js'
import { medianRun, pairedMedian, withFloorRatios } from '../../bench/rounds.js'
import type { LoadRun, Target, VariantResult } from '../../bench/report/types.js'

/**
 * How a scenario is judged, on hand-made rounds: ratios are medians of per-round
 * comparisons, the CPU target counts, and a scenario whose direct run is under 3 × the
 * bare proxy is marked invalid instead of judged.
 */

function variant (id: string, rates: number[], options: { cpu?: number[], p99?: number[] } = {}): VariantResult {
  const rounds: LoadRun[] = rates.map((requestsPerSecond, i) => ({
    requestsPerSecond,
    p50Ms: 1,
    p99Ms: options.p99?.[i] ?? 5,
    non2xx: 0,
    errors: 0,
    timeouts: 0,
    ...(options.cpu !== undefined ? { proxyCpuMicrosPerRequest: options.cpu[i] as number } : {})
  }))
  return { id, label: id, role: 'candidate', rounds, median: medianRun(rounds) }
}

const target: Target = { description: 't', against: 'bare', minThroughputRatio: 0.9, maxCpuRatio: 1.15, maxP99ExcessMs: 1 }
const bare = (): VariantResult => variant('bare', [1000, 2000, 1000], { cpu: [100, 100, 100], p99: [5, 5, 5] })

t.test('ratios are medians of the per-round ratios, not ratios of medians', async (t) => {
  // a machine that speeds up in round 2 moves both sides: per round the candidate is always 0.95
  const scenario = judge({ id: 's', title: 's', request: 'r', variants: [variant('direct', [10_000, 20_000, 10_000]), bare(), variant('gw', [950, 1900, 950], { cpu: [110, 110, 110], p99: [5.5, 5.5, 5.5] })], candidate: 'gw', target })
  t.equal(scenario.throughputRatio, 0.95)
  t.equal(scenario.cpuRatio, 1.1)
  t.equal(scenario.p99ExcessMs, 0.5)
  t.equal(scenario.headroom, 10)
  t.equal(scenario.valid, true)
  t.equal(scenario.met, true, 'within every bound')
  t.ok(Number.isNaN(pairedMedian([{ requestsPerSecond: 3 } as LoadRun], [], (a, b) => a.requestsPerSecond / b.requestsPerSecond)), 'no pair: no figure')
})

t.test('the CPU target is judged: more CPU per request than allowed misses, and so does no CPU figure', async (t) => {
  const costly = judge({ id: 's', title: 's', request: 'r', variants: [variant('direct', [10_000, 20_000, 10_000]), bare(), variant('gw', [950, 1900, 950], { cpu: [120, 120, 120] })], candidate: 'gw', target })
  t.equal(costly.cpuRatio, 1.2)
  t.equal(costly.met, false, '1.2 × the bare proxy\'s CPU misses a 1.15 target though the throughput is met')
  const unmeasured = judge({ id: 's', title: 's', request: 'r', variants: [variant('direct', [10_000, 20_000, 10_000]), bare(), variant('gw', [950, 1900, 950])], candidate: 'gw', target })
  t.ok(Number.isNaN(unmeasured.cpuRatio))
  t.equal(unmeasured.met, false, 'a CPU target without a CPU figure is not met')
})

t.test('headroom under 3: marked invalid and not judged', async (t) => {
  const scenario = judge({ id: 's', title: 's', request: 'r', variants: [variant('direct', [2900, 5800, 2900]), bare(), variant('gw', [500, 1000, 500], { cpu: [300, 300, 300] })], candidate: 'gw', target })
  t.equal(scenario.headroom, 2.9)
  t.equal(scenario.valid, false)
  t.equal(scenario.met, null, 'neither met nor missed')
  t.equal(scenario.throughputRatio, 0.5, 'the figures are still reported')
  const justEnough = judge({ id: 's', title: 's', request: 'r', variants: [variant('direct', [3000, 6000, 3000]), bare(), variant('gw', [500, 1000, 500], { cpu: [300, 300, 300] })], candidate: 'gw', target })
  t.equal(justEnough.valid, true, '3 × is enough')
  t.equal(justEnough.met, false, 'and then judged')
  const noReference = judge({ id: 's', title: 's', request: 'r', variants: [variant('one', [1000, 1000, 1000]), variant('many', [900, 900, 900])], candidate: 'many', target: { description: 't', against: 'one', minThroughputRatio: 0.85 } })
  t.equal(noReference.headroom, null, 'no direct and bare run: no headroom figure')
  t.equal(noReference.valid, true)
  t.equal(noReference.met, true)
})

t.test('a target without bounds reports without judging', async (t) => {
  const scenario = judge({ id: 's', title: 's', request: 'r', variants: [variant('direct', [10_000, 10_000, 10_000]), bare(), variant('gw', [500, 500, 500])], candidate: 'gw', target: { description: 'reported', against: 'bare' } })
  t.equal(scenario.met, null)
})

t.test('every variant gets its ratio to the node floor of the same rotation', async (t) => {
  const variants = withFloorRatios([variant('floor', [1000, 2000, 4000]), variant('bare', [800, 1800, 2000]), variant('gw', [500, 1000, 2000])], 'floor')
  t.same(variants.map((v) => v.floorRatio), [1, 0.8, 0.5])
  t.same(withFloorRatios([bare()], 'floor').map((v) => v.floorRatio), [undefined], 'no floor in the rotation: no ratio')
})
