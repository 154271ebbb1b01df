/** A parsed HTTP answer: status, lower-cased headers, and the body as JSON (or text). */
export interface HttpAnswer<T = any> {
  status: number
  headers: Record<string, string>
  body: T
  text: string
}

export interface HttpRequest {
  method?: string
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
