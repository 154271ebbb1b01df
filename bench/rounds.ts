import type { LoadDriver } from './load/driver.js'
import { treeCpuSecondsOf } from './processes/proc-stats.js'
import type { LoadJob, LoadOutcome } from './load/job.js'
import type { LoadRun, VariantResult } from './report/types.js'

/** One side of a comparison: how to build its load job (a fresh token, say) each run. */
export interface VariantSpec {
  id: string
  label: string
  role: VariantResult['role']
  job: () => Promise<LoadJob> | LoadJob
  /** The proxy process whose CPU time per request is measured (with its descendants), if any. */
  pid?: number
  /** Status every answer must have; default: any 2xx. */
  expectStatus?: number
}

export interface RoundOptions {
  rounds: number
  durationSeconds: number
  /** Unrecorded run of each variant before the rounds; 0: none. */
  warmupSeconds: number
  say: (line: string) => void
}

export function median (values: number[]): number {
  if (values.length === 0) return NaN
  const sorted = [...values].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[middle] as number : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2
}

/**
 * Median over the rounds of `of(a's run, b's run)` for the same round. Both sides of a
 * round ran back to back, so a machine that drifts during the scenario moves both; the
 * median of the per-round comparisons is not fooled by the drift the way a ratio of two
 * separate medians is.
 */
export function pairedMedian (a: LoadRun[], b: LoadRun[], of: (a: LoadRun, b: LoadRun) => number): number {
  return median(a.flatMap((run, i) => b[i] !== undefined ? [of(run, b[i])] : []))
}

/** `variants` with each one's throughput ratio to the node floor (`floorId`) of the same rotation, when it ran. */
export function withFloorRatios (variants: VariantResult[], floorId: string): VariantResult[] {
  const floor = variants.find((v) => v.id === floorId)
  if (floor === undefined) return variants
  return variants.map((v) => ({ ...v, floorRatio: pairedMedian(v.rounds, floor.rounds, (run, f) => run.requestsPerSecond / f.requestsPerSecond) }))
}

export function medianRun (runs: LoadRun[]): LoadRun {
  const of = (field: keyof LoadRun): number => median(runs.map((run) => run[field] ?? NaN))
  const cpu = runs.every((run) => run.proxyCpuMicrosPerRequest !== undefined) ? { proxyCpuMicrosPerRequest: of('proxyCpuMicrosPerRequest') } : {}
  return { requestsPerSecond: of('requestsPerSecond'), p50Ms: of('p50Ms'), p99Ms: of('p99Ms'), non2xx: of('non2xx'), errors: of('errors'), timeouts: of('timeouts'), ...cpu }
}

/** A run whose answers are not what the scenario sends for measures something else: stop. */
function checkOutcome (spec: VariantSpec, outcome: LoadOutcome): void {
  const unexpected = Object.entries(outcome.statusCounts)
    .filter(([status]) => spec.expectStatus !== undefined ? Number(status) !== spec.expectStatus : !status.startsWith('2'))
  if (unexpected.length > 0 || outcome.totalRequests === 0) {
    throw new Error(`${spec.label}: unexpected answers ${JSON.stringify(outcome.statusCounts)} (expected ${spec.expectStatus ?? '2xx'}); the setup is wrong, the numbers would mean nothing`)
  }
}

function reduce ({ statusCounts: _s, totalRequests: _t, ...run }: LoadOutcome): LoadRun {
  return run
}

/** One recorded run, with the proxy's CPU time per request when the variant names its process. */
async function measure (driver: LoadDriver, spec: VariantSpec, durationSeconds: number): Promise<LoadRun> {
  const cpuBefore = spec.pid !== undefined ? treeCpuSecondsOf(spec.pid) : 0
  const outcome = await driver.run({ ...await spec.job(), durationSeconds })
  checkOutcome(spec, outcome)
  const run = reduce(outcome)
  if (spec.pid !== undefined) run.proxyCpuMicrosPerRequest = (treeCpuSecondsOf(spec.pid) - cpuBefore) * 1e6 / outcome.totalRequests
  return run
}

export function formatRun (run: LoadRun): string {
  const cpu = run.proxyCpuMicrosPerRequest !== undefined ? `, proxy CPU ${Math.round(run.proxyCpuMicrosPerRequest)} µs/req` : ''
  return `${Math.round(run.requestsPerSecond).toLocaleString('en')} req/s, p50 ${run.p50Ms.toFixed(2)} ms, p99 ${run.p99Ms.toFixed(2)} ms${cpu}`
}

/**
 * Runs every variant once per round, reversing the order every other round (A B C,
 * C B A, …) so that a machine that slows down or speeds up during the scenario moves
 * every side alike; a short unrecorded warm-up first (JIT, caches, keep-alive pools).
 * Returns each variant's runs and their medians.
 */
export async function alternate (driver: LoadDriver, specs: VariantSpec[], options: RoundOptions): Promise<VariantResult[]> {
  const runs = new Map<string, LoadRun[]>(specs.map((spec) => [spec.id, []]))
  for (const spec of options.warmupSeconds > 0 ? specs : []) {
    checkOutcome(spec, await driver.run({ ...await spec.job(), durationSeconds: options.warmupSeconds }))
  }
  for (let round = 0; round < options.rounds; round++) {
    const order = round % 2 === 0 ? specs : [...specs].reverse()
    for (const spec of order) {
      const run = await measure(driver, spec, options.durationSeconds)
      runs.get(spec.id)?.push(run)
      options.say(`  round ${round + 1}/${options.rounds} ${spec.label}: ${formatRun(run)}`)
    }
  }
  return specs.map((spec) => {
    const own = runs.get(spec.id) ?? []
    return { id: spec.id, label: spec.label, role: spec.role, rounds: own, median: medianRun(own) }
  })
}
