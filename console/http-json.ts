/**
 * How the console calls identity: HTTP with JSON, as any client would, with the
 * signed-in user's own access token. Each answer is its status and parsed JSON body; a
 * problem's `code` and `detail` are what the pages show.
 */

export interface Problem { status: number, code: string, title: string, detail: string }

export type Answer<T> = { ok: true, status: number, body: T } | { ok: false, problem: Problem }

/** Who is calling identity on the user's behalf: their address (identity throttles logins by it) and browser. */
export interface ClientFacts { ip: string, userAgent: string | undefined }

export interface CallOptions { bearer?: string, body?: unknown, accept?: string }

/** One call to identity, parsed as JSON. */
export type JsonCall = <T>(method: string, path: string, client: ClientFacts, options?: CallOptions) => Promise<Answer<T>>

/** When identity cannot be reached or answers something that is not JSON. */
export const UNREACHABLE: Problem = { status: 502, code: 'identity_unavailable', title: 'Identity is unavailable', detail: 'The identity service could not be reached. Try again in a moment.' }

export function problemOf (status: number, body: unknown): Problem {
  const b = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>
  const text = (name: string, fallback: string): string => typeof b[name] === 'string' ? b[name] : fallback
  return { status, code: text('code', 'unknown'), title: text('title', 'Request refused'), detail: text('detail', text('title', 'The request was refused.')) }
}

export function requestHeaders (client: ClientFacts, options: CallOptions): Record<string, string> {
  const headers: Record<string, string> = {
    accept: options.accept ?? 'application/json',
    // Identity trusts this only from the addresses in its IDENTITY_TRUST_PROXY: then its per-IP login throttle sees the browser, not the console.
    'x-forwarded-for': client.ip
  }
  if (client.userAgent !== undefined) headers['user-agent'] = client.userAgent
  if (options.bearer !== undefined) headers.authorization = `Bearer ${options.bearer}`
  if (options.body !== undefined) headers['content-type'] = 'application/json'
  return headers
}

/** A caller of the identity listener at `baseUrl`. */
export function jsonCaller (baseUrl: string, timeoutMs = 10_000): JsonCall {
  return async function call<T> (method: string, path: string, client: ClientFacts, options: CallOptions = {}): Promise<Answer<T>> {
    let response: Response
    let text: string
    try {
      response = await fetch(`${baseUrl}${path}`, {
        method,
        headers: requestHeaders(client, options),
        ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
        signal: AbortSignal.timeout(timeoutMs)
      })
      text = await response.text()
    } catch {
      return { ok: false, problem: UNREACHABLE }
    }
    let body: unknown = null
    try { body = text === '' ? null : JSON.parse(text) } catch {
      return { ok: false, problem: UNREACHABLE }
    }
    return response.ok ? { ok: true, status: response.status, body: body as T } : { ok: false, problem: problemOf(response.status, body) }
  }
}
