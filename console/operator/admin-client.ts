import { Readable } from 'node:stream'
import type { ReadableStream } from 'node:stream/web'
import { jsonCaller, problemOf, requestHeaders, UNREACHABLE, type Answer, type CallOptions, type ClientFacts, type Problem } from '../http-json.js'

/** An answer passed on as it arrives: its body a stream, never held whole; a refusal is its problem, read in full (it is small). */
export type StreamAnswer = { ok: true, body: Readable } | { ok: false, problem: Problem }

/**
 * Identity's admin listener, for the operator pages: every call carries the signed-in
 * operator's own access token, so identity checks their operator permission and records
 * them (not a shared token) as the actor in the audit trail.
 */
export interface AdminClient {
  call: <T>(method: string, path: string, accessToken: string, client: ClientFacts, options?: Omit<CallOptions, 'bearer'>) => Promise<Answer<T>>
  /** The listener's base URL, for the one answer streamed through as it comes (the audit export). */
  readonly url: string
  /** A GET whose body is streamed through as it comes (the audit export), never buffered whole. */
  stream: (path: string, accessToken: string, client: ClientFacts, accept: string) => Promise<StreamAnswer>
}

export function createAdminClient (adminUrl: string, timeoutMs = 10_000): AdminClient {
  const call = jsonCaller(adminUrl, timeoutMs)
  return {
    url: adminUrl,
    call: async (method, path, accessToken, client, options = {}) => await call(method, path, client, { ...options, bearer: accessToken }),
    stream: async (path, accessToken, client, accept) => await streamed(`${adminUrl}${path}`, requestHeaders(client, { bearer: accessToken, accept }), timeoutMs)
  }
}

/** The timeout covers identity's answer, not its body: a long export may rightly take longer to send than any one call. */
async function streamed (url: string, headers: Record<string, string>, timeoutMs: number): Promise<StreamAnswer> {
  const answering = new AbortController()
  const timer = setTimeout(() => { answering.abort() }, timeoutMs)
  let response: Response
  try {
    response = await fetch(url, { headers, signal: answering.signal })
  } catch {
    return { ok: false, problem: UNREACHABLE }
  } finally {
    clearTimeout(timer)
  }
  if (response.ok && response.body !== null) return { ok: true, body: Readable.fromWeb(response.body as ReadableStream<Uint8Array>) }
  try {
    return { ok: false, problem: problemOf(response.status, JSON.parse(await response.text())) }
  } catch {
    return { ok: false, problem: UNREACHABLE }
  }
}
