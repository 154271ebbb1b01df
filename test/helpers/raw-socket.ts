import { connect } from 'node:net'
import type { HttpAnswer } from './http.js'

/**
 * HTTP/1.1 over a bare TCP socket, for requests node:http and fetch refuse to send:
 * CR/LF or raw bytes in a header value, duplicate headers, invalid UTF-8 in the
 * request line or body, oversized header blocks, Content-Length lies.
 */

export interface SocketAnswer extends HttpAnswer {
  /** False when the server closed the connection (or the wait ran out) without a complete answer. */
  answered: boolean
  /** Every response header line as sent, duplicates kept. */
  rawHeaders: Array<[string, string]>
}

const CRLF = Buffer.from('\r\n')
const HEADER_END = Buffer.from('\r\n\r\n')

/** Request bytes: the request line, header lines exactly as given (values may hold anything), then the body. */
export function requestBytes (requestLine: string | Buffer, headers: Array<[string, string | Buffer]>, body: string | Buffer = ''): Buffer {
  const parts: Buffer[] = [Buffer.isBuffer(requestLine) ? requestLine : Buffer.from(requestLine, 'latin1'), CRLF]
  for (const [name, value] of headers) {
    parts.push(Buffer.from(`${name}: `, 'latin1'), Buffer.isBuffer(value) ? value : Buffer.from(value, 'latin1'), CRLF)
  }
  parts.push(CRLF, Buffer.isBuffer(body) ? body : Buffer.from(body, 'utf8'))
  return Buffer.concat(parts)
}

/** Decodes a chunked body; null while it is incomplete. */
function dechunk (data: Buffer): Buffer | null {
  const chunks: Buffer[] = []
  let at = 0
  for (;;) {
    const lineEnd = data.indexOf(CRLF, at)
    if (lineEnd === -1) return null
    const size = Number.parseInt(data.subarray(at, lineEnd).toString('latin1'), 16)
    if (Number.isNaN(size)) return null
    if (size === 0) return Buffer.concat(chunks)
    const start = lineEnd + 2
    if (data.length < start + size + 2) return null
    chunks.push(data.subarray(start, start + size))
    at = start + size + 2
  }
}

/** The first complete answer in `data`, or null if there is none yet. */
function parseAnswer (data: Buffer, closed: boolean): SocketAnswer | null {
  const headerEnd = data.indexOf(HEADER_END)
  if (headerEnd === -1) return null
  const [statusLine = '', ...lines] = data.subarray(0, headerEnd).toString('latin1').split('\r\n')
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine)?.[1] ?? 0)
  const rawHeaders = lines.map((line): [string, string] => {
    const colon = line.indexOf(':')
    return [line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim()]
  })
  const headers: Record<string, string> = {}
  for (const [name, value] of rawHeaders) headers[name] = name in headers ? `${headers[name]}, ${value}` : value
  const rest = data.subarray(headerEnd + 4)
  let bytes: Buffer | null
  if (headers['transfer-encoding']?.toLowerCase().includes('chunked') === true) bytes = dechunk(rest)
  else if (headers['content-length'] !== undefined) {
    const length = Number(headers['content-length'])
    bytes = rest.length >= length ? rest.subarray(0, length) : null
  } else bytes = closed || status === 204 || status === 304 || (status >= 100 && status < 200) ? rest : null
  if (bytes === null) return null
  const text = bytes.toString('utf8')
  let body: unknown = text
  try { body = text === '' ? null : JSON.parse(text) } catch {}
  return { status, headers, rawHeaders, body, text, answered: true }
}

/**
 * Writes `bytes` to host:port and resolves with the first answer, once it is complete
 * (the connection is then closed), or with `answered: false` if the server closes
 * first or nothing complete arrives within `timeoutMs`.
 */
export async function socketRequest (url: string, bytes: Buffer, timeoutMs = 5_000): Promise<SocketAnswer> {
  const { hostname, port } = new URL(url)
  return await new Promise((resolve, reject) => {
    const socket = connect({ host: hostname, port: Number(port) })
    let data = Buffer.alloc(0)
    let settled = false
    const finish = (closed: boolean): void => {
      if (settled) return
      const answer = parseAnswer(data, closed)
      if (answer === null && !closed) return
      settled = true
      clearTimeout(timer)
      socket.destroy()
      resolve(answer ?? { status: 0, headers: {}, rawHeaders: [], body: null, text: data.toString('latin1'), answered: false })
    }
    const timer = setTimeout(() => { finish(true) }, timeoutMs)
    socket.on('data', (chunk: Buffer) => { data = Buffer.concat([data, chunk]); finish(false) })
    socket.on('end', () => { finish(true) })
    socket.on('close', () => { finish(true) })
    socket.on('error', (err: NodeJS.ErrnoException) => {
      // A reset after the server answered and closed is a closed connection, not a failure.
      if (err.code === 'ECONNRESET' || err.code === 'EPIPE') finish(true)
      else if (!settled) { settled = true; clearTimeout(timer); reject(err) }
    })
    socket.write(bytes)
  })
}
