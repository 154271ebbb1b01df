import { request } from 'undici'
import type { LoadDriver } from '../load/driver.js'
import type { TokenSet } from '../load/job.js'
import type { RoundOptions } from '../rounds.js'
import { median } from '../rounds.js'
import type { LoadRun, ScenarioResult, Target, VariantResult } from '../report/types.js'
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

/** A scenario's verdict: the candidate's medians against the target's reference. */
export function judge (input: { id: string, title: string, request: string, variants: VariantResult[], candidate: string, target: Target, notes?: string[] }): ScenarioResult {
  const candidate = variant(input.variants, input.candidate).rounds
  const against = variant(input.variants, input.target.against).rounds
  // Paired by round: both sides of a round ran back to back, so a machine that drifts
  // during the scenario moves both; the median of the per-round comparisons is not
  // fooled by the drift the way a ratio of two separate medians is.
  const paired = (of: (c: LoadRun, a: LoadRun) => number): number => median(candidate.map((run, i) => of(run, against[i] as LoadRun)))
  const throughputRatio = paired((c, a) => c.requestsPerSecond / a.requestsPerSecond)
  const p99ExcessMs = paired((c, a) => c.p99Ms - a.p99Ms)
  const checks: boolean[] = []
  if (input.target.minThroughputRatio !== undefined) checks.push(throughputRatio >= input.target.minThroughputRatio)
  if (input.target.maxP99ExcessMs !== undefined) checks.push(p99ExcessMs <= input.target.maxP99ExcessMs)
  return {
    id: input.id,
    title: input.title,
    request: input.request,
    variants: input.variants,
    candidate: input.candidate,
    target: input.target,
    throughputRatio,
    p99ExcessMs,
    met: checks.length === 0 ? null : checks.every(Boolean),
    notes: input.notes ?? []
  }
}
