import { Agent, request as httpRequest } from 'node:http'
import type { Test } from 'tap'

/**
 * A bounded load for the fault suites: `loops` concurrent request loops on loopback,
 * each sending one request at a time for at most `durationMs`, every request with its
 * own deadline. Each answer is recorded with its status, latency and how it ended,
 * so a suite can assert "no 5xx", "nothing hung" and "no reset mid-response" while it
 * kills and restarts processes under it. Bodies are not kept (they may hold secrets).
 */

export interface LoadTarget {
  /** Names the kind of request in reports (never the credential itself). */
  label: string
  url: string
  headers?: Record<string, string>
}

export interface LoadSample {
  label: string
  loop: number
  /** performance.now() when the request was sent. */
  startedAt: number
  ms: number
  /** The HTTP status, or null when no response head arrived. */
  status: number | null
  /** The error code (ECONNREFUSED, ECONNRESET, …) when the exchange failed, else null. */
  error: string | null
  /** The failure came after the response head: a response cut mid-way. */
  cutMidResponse: boolean
  /** No answer within the per-request deadline: aborted and counted as a hang. */
  hung: boolean
  contentType: string | null
  retryAfter: string | null
  /** A problem+json answer's `code`. */
  code: string | null
}

export interface LoadOptions {
  loops: number
  /** Loops send no new request after this long, whatever `stop` says. */
  durationMs: number
  /** A request not answered within this is aborted and recorded as hung. */
  requestTimeoutMs: number
  /** The request loop `loop` sends as its `n`-th. */
  target: (loop: number, n: number) => LoadTarget
  /** Pause between two requests of one loop (default 0). */
  pauseMs?: number
  /** A new connection for every request (default: keep-alive connections, one per loop). */
  freshConnections?: boolean
}

export interface LoadRun {
  /** Every sample so far (it grows while the run lasts). */
  samples: LoadSample[]
  /** Asks the loops to stop after their current request; resolves with every sample. */
  stop: () => Promise<LoadSample[]>
  /** Resolves when every loop has ended (after durationMs at the latest, plus one deadline). */
  done: Promise<LoadSample[]>
}

const sleep = async (ms: number): Promise<void> => { await new Promise((resolve) => setTimeout(resolve, ms)) }

/** One GET, recorded whatever happens to it; never rejects. */
export async function sample (target: LoadTarget, options: { agent: Agent | false, requestTimeoutMs: number, loop?: number }): Promise<LoadSample> {
  const startedAt = performance.now()
  const out: LoadSample = {
    label: target.label, loop: options.loop ?? 0, startedAt, ms: 0, status: null, error: null, cutMidResponse: false, hung: false, contentType: null, retryAfter: null, code: null
  }
  return await new Promise((resolve) => {
    let settled = false
    const finish = (): void => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      out.ms = Math.round(performance.now() - startedAt)
      resolve(out)
    }
    const { hostname, port, pathname, search } = new URL(target.url)
    const req = httpRequest({
      host: hostname, port, path: pathname + search, method: 'GET', agent: options.agent, headers: { accept: 'application/json', ...target.headers }
    }, (res) => {
      out.status = res.statusCode ?? null
      out.contentType = res.headers['content-type'] ?? null
      out.retryAfter = typeof res.headers['retry-after'] === 'string' ? res.headers['retry-after'] : null
      const chunks: Buffer[] = []
      res.on('data', (chunk: Buffer) => chunks.push(chunk))
      res.on('error', (err: NodeJS.ErrnoException) => { out.error = err.code ?? err.message; out.cutMidResponse = true; finish() })
      res.on('aborted', () => { out.error ??= 'aborted'; out.cutMidResponse = true; finish() })
      res.on('end', () => {
        if (!res.complete) { out.error ??= 'incomplete'; out.cutMidResponse = true }
        if (out.contentType?.startsWith('application/problem+json') === true) {
          try { out.code = (JSON.parse(Buffer.concat(chunks).toString('utf8')) as { code?: string }).code ?? null } catch {}
        }
        finish()
      })
    })
    req.on('error', (err: NodeJS.ErrnoException) => {
      if (settled) return
      out.error = err.code ?? err.message
      // An error after the head arrived means the body was cut.
      if (out.status !== null) out.cutMidResponse = true
      finish()
    })
    const timer = setTimeout(() => { out.hung = true; req.destroy(new Error('deadline')); finish() }, options.requestTimeoutMs)
    req.end()
  })
}

/** Starts the loops at once; see LoadOptions. */
export function startLoad (options: LoadOptions): LoadRun {
  const samples: LoadSample[] = []
  const agent = options.freshConnections === true ? false : new Agent({ keepAlive: true, maxSockets: options.loops })
  const endAt = performance.now() + options.durationMs
  let stopping = false
  const loop = async (index: number): Promise<void> => {
    for (let n = 0; !stopping && performance.now() < endAt; n++) {
      samples.push(await sample(options.target(index, n), { agent, requestTimeoutMs: options.requestTimeoutMs, loop: index }))
      if ((options.pauseMs ?? 0) > 0) await sleep(options.pauseMs as number)
    }
  }
  const done = Promise.all(Array.from({ length: options.loops }, async (_, i) => { await loop(i) }))
    .then(() => { if (agent !== false) agent.destroy(); return samples })
  return {
    samples,
    done,
    stop: async () => { stopping = true; return await done }
  }
}

/** Runs the loops for `durationMs` and resolves with every sample. */
export async function runLoad (options: LoadOptions): Promise<LoadSample[]> {
  return await startLoad(options).done
}

/** Counts by outcome ("200", "503", "ECONNREFUSED", "hung"), for assertion messages. */
export function outcomes (samples: readonly LoadSample[]): Record<string, number> {
  const counts: Record<string, number> = {}
  for (const s of samples) {
    const key = s.hung ? 'hung' : s.cutMidResponse ? `cut:${s.error ?? ''}` : s.status !== null ? String(s.status) : String(s.error)
    counts[key] = (counts[key] ?? 0) + 1
  }
  return counts
}

/** Latency summary in ms: count, median, p99 and maximum. */
export function latency (samples: readonly LoadSample[]): { count: number, p50: number, p99: number, max: number } {
  const sorted = samples.map((s) => s.ms).sort((a, b) => a - b)
  const at = (q: number): number => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0
  return { count: sorted.length, p50: at(0.5), p99: at(0.99), max: sorted.at(-1) ?? 0 }
}

/**
 * The assertions every fault suite makes of a load: something was measured, nothing
 * hung, no response was cut mid-way, and (unless `allowed` says otherwise) every
 * answer was one of `statuses`. Four assertions; the counts go in the messages.
 */
export function assertLoad (t: Test, samples: readonly LoadSample[], label: string, statuses: readonly number[]): void {
  const counts = outcomes(samples)
  t.ok(samples.length > 0, `${label}: ${samples.length} requests measured`)
  t.equal(samples.filter((s) => s.hung).length, 0, `${label}: no request hung`, { counts })
  t.equal(samples.filter((s) => s.cutMidResponse).length, 0, `${label}: no response cut mid-way`, { counts })
  const unexpected = samples.filter((s) => s.status === null || !statuses.includes(s.status))
  t.equal(unexpected.length, 0, `${label}: every answer is ${statuses.join(' or ')} (${JSON.stringify(counts)})`,
    { unexpected: unexpected.slice(0, 10).map(({ label, status, error, code, ms }) => ({ label, status, error, code, ms })) })
}
