/** Docker runs a HEALTHCHECK with its own deadline; answering well within it keeps "unhealthy" meaningful. */
export const DEFAULT_PROBE_TIMEOUT_MS = 2_000

export interface ProbeResult {
  /** 0: a 2xx answer in time; 1: anything else (Docker reserves 2). */
  code: 0 | 1
  /** One short line for `docker inspect`'s health log; never a response body. */
  line: string
}

function reasonOf (err: unknown): string {
  if (err instanceof Error && err.name === 'TimeoutError') return 'no answer in time'
  // fetch wraps the socket error: its code (ECONNREFUSED, ENOTFOUND…) says more than "fetch failed".
  const cause = (err as { cause?: { code?: unknown, message?: unknown } }).cause
  if (typeof cause?.code === 'string') return cause.code
  return err instanceof Error ? err.message : String(err)
}

/**
 * One GET of `url`: healthy on a 2xx within `timeoutMs`. Redirects are not followed
 * (a health route that redirects is misconfigured), and the body is discarded.
 */
export async function probeHealth (url: string, timeoutMs = DEFAULT_PROBE_TIMEOUT_MS): Promise<ProbeResult> {
  let target: URL
  try {
    target = new URL(url)
  } catch {
    return { code: 1, line: `unhealthy: not a URL: ${url}` }
  }
  if (target.protocol !== 'http:' && target.protocol !== 'https:') return { code: 1, line: `unhealthy: not an http(s) URL: ${url}` }
  try {
    const response = await fetch(target, { redirect: 'manual', signal: AbortSignal.timeout(timeoutMs) })
    await response.body?.cancel()
    const healthy = response.status >= 200 && response.status < 300
    return { code: healthy ? 0 : 1, line: `${healthy ? 'healthy' : 'unhealthy'}: ${response.status} ${target.href}` }
  } catch (err) {
    return { code: 1, line: `unhealthy: ${reasonOf(err)} ${target.href}` }
  }
}
