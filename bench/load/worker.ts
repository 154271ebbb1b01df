import autocannon from 'autocannon'
import type { EventEmitter } from 'node:events'
import { createHistogram } from 'node:perf_hooks'
import type { LoadJob, LoadOutcome, TokenSet } from './job.js'

/**
 * The load generator's own process: the bench forks it and sends jobs over IPC, so
 * the client's CPU is never the orchestrator's. autocannon's latency histogram has
 * 1 ms resolution; the "p99 ≤ bare p99 + 1 ms" target needs finer, so latencies are
 * recorded here in microseconds from autocannon's per-response durations.
 */

type Request = autocannon.Request

const COUNTED_RUN_TICK_MS = 20

function requestsOf (job: LoadJob): Request[] {
  const base: Request = { method: job.method, headers: job.headers, ...(job.body !== undefined ? { body: job.body } : {}) }
  const { rotateHeader, refreshTokens } = job
  if (rotateHeader !== undefined) {
    const { name, values, sequential = false } = rotateHeader
    let next = 0
    const pick = sequential ? () => values[next++ % values.length] : () => values[Math.floor(Math.random() * values.length)]
    return [{
      ...base,
      setupRequest: (request) => ({ ...request, headers: { ...request.headers, [name]: pick() as string } })
    }]
  }
  if (refreshTokens !== undefined) {
    // autocannon resets a request's context after every sequence, so the live token
    // sets circulate through one pool: a request takes one, its answer puts the new
    // one back. No refresh token is ever sent twice; a failed refresh loses its chain,
    // and once none is left the requests say so with a set identity refuses (non-2xx).
    const pool = [...refreshTokens]
    const exhausted = { access_token: 'exhausted', refresh_token: 'exhausted' }
    return [{
      ...base,
      setupRequest: (request) => {
        const set = pool.shift() ?? exhausted
        return { ...request, headers: { ...request.headers, authorization: `Bearer ${set.access_token}` }, body: JSON.stringify({ refresh_token: set.refresh_token }) }
      },
      onResponse: (status, body) => {
        if (status === 200) pool.push(JSON.parse(body) as TokenSet)
      }
    }]
  }
  return [base]
}

async function run (job: LoadJob): Promise<LoadOutcome> {
  const latencyMicros = createHistogram()
  const instance = autocannon({
    url: job.url,
    connections: job.connections,
    // autocannon notices a counted run is done only on its sampling tick (1 s by
    // default): a short tick ends it with its last answer rather than up to a second later.
    ...(job.amount !== undefined ? { amount: job.amount, sampleInt: COUNTED_RUN_TICK_MS } : { duration: job.durationSeconds }),
    pipelining: 1,
    requests: requestsOf(job)
  }) as unknown as Promise<autocannon.Result> & EventEmitter // the tracker: an emitter that is also a thenable
  // Its result is awaited below; `on` hands back the same thenable.
  void instance.on('response', (_client: unknown, _status: number, _bytes: number, responseTimeMs: number) => {
    latencyMicros.record(Math.max(1, Math.round(responseTimeMs * 1000)))
  })
  const result = await instance
  const statusCounts: Record<string, number> = {}
  for (const [status, { count }] of Object.entries(result.statusCodeStats ?? {})) statusCounts[status] = count ?? 0
  const micros = (percentile: number): number => latencyMicros.count === 0 ? 0 : latencyMicros.percentile(percentile) / 1000
  return {
    requestsPerSecond: result.requests.total / result.duration,
    p50Ms: micros(50),
    p99Ms: micros(99),
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    statusCounts,
    totalRequests: result.requests.total
  }
}

process.on('message', (job: LoadJob) => {
  run(job).then(
    (outcome) => { process.send?.({ ok: true, outcome }) },
    (err: unknown) => { process.send?.({ ok: false, error: err instanceof Error ? err.message : String(err) }) }
  )
})
