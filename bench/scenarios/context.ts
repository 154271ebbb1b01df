import { request } from 'undici'
import type { LoadDriver } from '../load/driver.js'
import type { TokenSet } from '../load/job.js'
import type { RoundOptions } from '../rounds.js'
import { pairedMedian } from '../rounds.js'
import { MIN_HEADROOM, type LoadRun, type ScenarioResult, type Target, type VariantResult } from '../report/types.js'
import type { Stack } from '../stack.js'

/** What every scenario gets from the orchestrator. */
export interface BenchContext {
  stack: Stack
  driver: LoadDriver
  connections: number
  rounds: RoundOptions
  say: (line: string) => void
}

/** The body of `POST /sessions` for the bench user. */
export function loginBody (stack: Stack): string {
  return JSON.stringify({ session: stack.accounts.user })
}

/** A login through the gateway, as a client does it. */
export async function login (stack: Stack): Promise<TokenSet> {
  const response = await request(`${stack.gateway.url}/sessions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: loginBody(stack)
  })
  if (response.statusCode !== 201) throw new Error(`bench login answered ${response.statusCode}: ${await response.body.text()}`)
  return await response.body.json() as TokenSet
}

function variant (variants: VariantResult[], id: string): VariantResult {
  const found = variants.find((v) => v.id === id)
  if (found === undefined) throw new Error(`no variant ${id}`)
  return found
}

/** Ids of the variants the headroom check compares: the upstream called directly, and the bare proxy in front of it. */
export const DIRECT_ID = 'direct'
export const BARE_ID = 'bare'
export const FLOOR_ID = 'floor'

/**
 * A scenario's verdict: the candidate's medians against the target's reference, each
 * a median of per-round comparisons (rounds.ts pairedMedian). Not judged when direct
 * ran at less than MIN_HEADROOM × the bare proxy: then the upstream or the load
 * generator, not the proxies, set the pace, and every proxy looks alike.
 */
export function judge (input: { id: string, title: string, request: string, variants: VariantResult[], candidate: string, target: Target, notes?: string[] }): ScenarioResult {
  const candidate = variant(input.variants, input.candidate).rounds
  const against = variant(input.variants, input.target.against).rounds
  const paired = (of: (c: LoadRun, a: LoadRun) => number): number => pairedMedian(candidate, against, of)
  const throughputRatio = paired((c, a) => c.requestsPerSecond / a.requestsPerSecond)
  const p99ExcessMs = paired((c, a) => c.p99Ms - a.p99Ms)
  const cpuRatio = paired((c, a) => (c.proxyCpuMicrosPerRequest ?? NaN) / (a.proxyCpuMicrosPerRequest ?? NaN))
  const direct = input.variants.find((v) => v.id === DIRECT_ID)
  const bare = input.variants.find((v) => v.id === BARE_ID)
  const headroom = direct !== undefined && bare !== undefined
    ? pairedMedian(direct.rounds, bare.rounds, (d, b) => d.requestsPerSecond / b.requestsPerSecond)
    : null
  const valid = headroom === null || headroom >= MIN_HEADROOM
  const checks: boolean[] = []
  const { minThroughputRatio, maxP99ExcessMs, maxCpuRatio } = input.target
  if (minThroughputRatio !== undefined) checks.push(throughputRatio >= minThroughputRatio)
  if (maxP99ExcessMs !== undefined) checks.push(p99ExcessMs <= maxP99ExcessMs)
  // NaN (no CPU figure) fails the check rather than passing it.
  if (maxCpuRatio !== undefined) checks.push(cpuRatio <= maxCpuRatio)
  return {
    id: input.id,
    title: input.title,
    request: input.request,
    variants: input.variants,
    candidate: input.candidate,
    target: input.target,
    throughputRatio,
    p99ExcessMs,
    cpuRatio,
    headroom,
    valid,
    met: checks.length === 0 || !valid ? null : checks.every(Boolean),
    notes: input.notes ?? []
  }
}
