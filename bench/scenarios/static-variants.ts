import type { LoadJob } from '../load/job.js'
import { alternate, type VariantSpec } from '../rounds.js'
import type { ScenarioResult, Target } from '../report/types.js'
import type { PageSize } from '../static-upstream/pages.js'
import type { Service } from '../processes/service.js'
import { staticUsersPath } from '../upstreams.js'
import { BARE_ID, DIRECT_ID, FLOOR_ID, judge, type BenchContext } from './context.js'

/**
 * The variants the throughput scenarios share, all calling `GET /users?size=…` on the
 * static upstream (directly or through a proxy), and the targets they are judged by.
 */

export const PAGE_LABELS: Record<PageSize, string> = { '1k': '1 KB', '7k': '7 KB', '30k': '30 KB' }

/** The API key target (7 KB), which the Bearer scenario shares. */
export const KEY_TARGET: Target = {
  description: '≥ 0.90 × bare proxy; CPU µs/request ≤ 1.15 × bare; p99 ≤ bare p99 + 1 ms',
  against: BARE_ID,
  minThroughputRatio: 0.9,
  maxCpuRatio: 1.15,
  maxP99ExcessMs: 1
}

/**
 * Camel inflection against the bare proxy, by page size: renaming costs per byte, so
 * the larger page has the lower bound.
 */
const CAMEL_TARGETS: Partial<Record<PageSize, Target>> = {
  '7k': { description: '≥ 0.80 × bare proxy', against: BARE_ID, minThroughputRatio: 0.8 },
  '30k': { description: '≥ 0.70 × bare proxy', against: BARE_ID, minThroughputRatio: 0.7 }
}

export function camelTarget (size: PageSize): Target {
  const target = CAMEL_TARGETS[size]
  if (target === undefined) throw new Error(`camel inflection has no target for the ${PAGE_LABELS[size]} page`)
  return target
}

export function staticGet (ctx: BenchContext, base: string, size: PageSize, headers: Record<string, string> = {}): LoadJob {
  return { url: base + staticUsersPath(size), method: 'GET', headers, connections: ctx.connections, durationSeconds: 0 }
}

/**
 * The `x-api-key` header: unless another is given, the bench's key with a rate limit
 * far above the load, as a key is in production (every request counted, none refused).
 */
export function apiKey (ctx: BenchContext, key: string = ctx.stack.accounts.limitedApiKey): Record<string, string> {
  return { 'x-api-key': key }
}

/** Direct to the static upstream and the bare proxy: the pair the headroom check compares. */
export function headroomVariants (ctx: BenchContext, size: PageSize): VariantSpec[] {
  const { stack } = ctx
  return [
    { id: DIRECT_ID, label: 'direct to the static upstream', role: 'reference', job: () => staticGet(ctx, stack.upstream.url, size) },
    { id: BARE_ID, label: 'bare proxy (Fastify + @fastify/http-proxy)', role: 'baseline', pid: stack.bare.pid, job: () => staticGet(ctx, stack.bare.url, size) }
  ]
}

export function floorVariant (ctx: BenchContext, size: PageSize): VariantSpec {
  const { floor } = ctx.stack
  return { id: FLOOR_ID, label: 'node floor (node:http + undici Pool)', role: 'reference', pid: floor.pid, job: () => staticGet(ctx, floor.url, size) }
}

/** A gateway with the bench's API key, or with `key`. */
export function gatewayKeyVariant (ctx: BenchContext, gateway: Service, size: PageSize, id: string, label: string, role: VariantSpec['role'] = 'candidate', key?: string): VariantSpec {
  return { id, label, role, pid: gateway.pid, job: () => staticGet(ctx, gateway.url, size, apiKey(ctx, key)) }
}

/** The gateway with the bench's API key, asking for camelCase member names. */
export function gatewayCamelVariant (ctx: BenchContext, size: PageSize): VariantSpec {
  const { gateway } = ctx.stack
  return { id: 'gateway-camel', label: 'gateway, API key + camel inflection', role: 'candidate', pid: gateway.pid, job: () => staticGet(ctx, gateway.url, size, { ...apiKey(ctx), 'x-api-inflection': 'camel' }) }
}

interface KeyedScenario {
  id: string
  title: string
  target: Target
  notes?: string[]
}

/** A baseline and a candidate sending the keyed 7 KB request, in one rotation with the headroom pair, judged. */
async function judgeKeyedPair (ctx: BenchContext, scenario: KeyedScenario, baseline: VariantSpec, candidate: VariantSpec): Promise<ScenarioResult> {
  const variants = await alternate(ctx.driver, [...headroomVariants(ctx, '7k'), baseline, candidate], ctx.rounds)
  return judge({
    id: scenario.id,
    title: scenario.title,
    request: `GET ${staticUsersPath('7k')} from the static upstream, API key, ${ctx.connections} connections`,
    variants,
    candidate: candidate.id,
    target: scenario.target,
    ...(scenario.notes !== undefined ? { notes: scenario.notes } : {})
  })
}

/** Two gateways, the same keyed 7 KB request through each, in one rotation with the headroom pair. */
export async function compareGateways (ctx: BenchContext, scenario: KeyedScenario & {
  baseline: { gateway: Service, id: string, label: string }
  candidate: { gateway: Service, id: string, label: string }
}): Promise<ScenarioResult> {
  const { baseline, candidate } = scenario
  return await judgeKeyedPair(ctx, scenario,
    gatewayKeyVariant(ctx, baseline.gateway, '7k', baseline.id, baseline.label, 'baseline'),
    gatewayKeyVariant(ctx, candidate.gateway, '7k', candidate.id, candidate.label))
}

/** One gateway, the same 7 KB request with two API keys, in one rotation with the headroom pair. */
export async function compareKeys (ctx: BenchContext, scenario: KeyedScenario & {
  gateway: Service
  baseline: { key: string, id: string, label: string }
  candidate: { key: string, id: string, label: string }
}): Promise<ScenarioResult> {
  const { gateway, baseline, candidate } = scenario
  return await judgeKeyedPair(ctx, scenario,
    gatewayKeyVariant(ctx, gateway, '7k', baseline.id, baseline.label, 'baseline', baseline.key),
    gatewayKeyVariant(ctx, gateway, '7k', candidate.id, candidate.label, 'candidate', candidate.key))
}
