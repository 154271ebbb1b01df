import { request as httpRequest, type IncomingHttpHeaders } from 'node:http'

/** A parsed HTTP answer: status, lower-cased headers, and the body as JSON (or text). */
export interface HttpAnswer<T = any> {
  status: number
  headers: Record<string, string>
  body: T
  text: string
}

export interface HttpRequest {
  method?: string | undefined
  headers?: Record<string, string>
  /** Serialised as JSON unless it is already a string. */
  body?: unknown
  bearer?: string
}

/** fetch over a real socket, with JSON in and out. */
export async function http<T = any> (url: string, request: HttpRequest = {}): Promise<HttpAnswer<T>> {
  const headers: Record<string, string> = { accept: 'application/json', ...request.headers }
  if (request.bearer !== undefined) headers.authorization = `Bearer ${request.bearer}`
  let body: string | undefined
  if (request.body !== undefined) {
    body = typeof request.body === 'string' ? request.body : JSON.stringify(request.body)
    headers['content-type'] ??= 'application/json'
  }
  const response = await fetch(url, { method: request.method ?? (body !== undefined ? 'POST' : 'GET'), headers, ...(body !== undefined ? { body } : {}) })
  const text = await response.text()
  let parsed: unknown = text
  try { parsed = text === '' ? null : JSON.parse(text) } catch {}
  return { status: response.status, headers: Object.fromEntries(response.headers), body: parsed as T, text }
}

/** An admin client bound to one identity. */
export function adminClient (adminUrl: string, adminToken: string) {
  return async <T = any>(method: string, path: string, body?: unknown): Promise<HttpAnswer<T>> =>
    await http<T>(`${adminUrl}${path}`, { method, bearer: adminToken, ...(body !== undefined ? { body } : {}) })
}

/** A raw answer: the parsed answer, plus the body's bytes exactly as they arrived (never decompressed). */
export interface RawAnswer<T = any> extends HttpAnswer<T> {
  bytes: Buffer
}

export interface RawRequest {
  method?: string
  headers?: Record<string, string>
  body?: string | Buffer
}

/**
 * One request over node:http with the request target sent exactly as given: fetch and
 * the URL class normalise `..`, `%2e` and `\`, which the path-trick tests must send
 * as written. No connection reuse, no decompression; a `101 Switching Protocols`
 * answer resolves with status 101 and the socket closed.
 */
export async function rawRequest<T = any> (url: string, rawPath: string, request: RawRequest = {}): Promise<RawAnswer<T>> {
  const { hostname, port } = new URL(url)
  return await new Promise((resolve, reject) => {
    const req = httpRequest({
      host: hostname, port, path: rawPath, method: request.method ?? 'GET', agent: false, headers: { accept: 'application/json', ...request.headers }
    }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (chunk: Buffer) => chunks.push(chunk))
      res.on('error', reject)
      res.on('end', () => {
        const bytes = Buffer.concat(chunks)
        const text = bytes.toString('utf8')
        let body: unknown = text
        try { body = text === '' ? null : JSON.parse(text) } catch {}
        resolve({ status: res.statusCode ?? 0, headers: flatHeaders(res.headers), body: body as T, text, bytes })
      })
    })
    req.on('upgrade', (res, socket) => {
      socket.destroy()
      resolve({ status: res.statusCode ?? 101, headers: flatHeaders(res.headers), body: null as T, text: '', bytes: Buffer.alloc(0) })
    })
    req.on('error', reject)
    req.end(request.body)
  })
}

function flatHeaders (headers: IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = {}
  for (const [name, value] of Object.entries(headers)) if (value !== undefined) out[name] = Array.isArray(value) ? value.join(', ') : value
  return out
}
