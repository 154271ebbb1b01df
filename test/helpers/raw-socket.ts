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

/** Decodes a chunked body, and how many bytes it took; null while it is incomplete. */
function dechunk (data: Buffer): { body: Buffer, length: number } | null {
  const chunks: Buffer[] = []
  let at = 0
  for (;;) {
    const lineEnd = data.indexOf(CRLF, at)
    if (lineEnd === -1) return null
    const size = Number.parseInt(data.subarray(at, lineEnd).toString('latin1'), 16)
    if (Number.isNaN(size)) return null
    if (size === 0) return data.length >= lineEnd + 4 ? { body: Buffer.concat(chunks), length: lineEnd + 4 } : null
    const start = lineEnd + 2
    if (data.length < start + size + 2) return null
    chunks.push(data.subarray(start, start + size))
    at = start + size + 2
  }
}

/** The first complete answer in `data`, or null if there is none yet. */
function parseAnswer (data: Buffer, closed: boolean): SocketAnswer | null {
  return parseAnswerAt(data, closed)?.answer ?? null
}

/** The first complete answer in `data` and where it ends, or null if there is none yet. */
function parseAnswerAt (data: Buffer, closed: boolean, head = false): { answer: SocketAnswer, end: number } | null {
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
  let length: number
  if (head) {
    bytes = Buffer.alloc(0)
    length = 0
  } else if (headers['transfer-encoding']?.toLowerCase().includes('chunked') === true) {
    const chunked = dechunk(rest)
    bytes = chunked?.body ?? null
    length = chunked?.length ?? 0
  } else if (headers['content-length'] !== undefined) {
    length = Number(headers['content-length'])
    bytes = rest.length >= length ? rest.subarray(0, length) : null
  } else if (head || status === 204 || status === 304 || (status >= 100 && status < 200)) {
    bytes = Buffer.alloc(0)
    length = 0
  } else {
    bytes = closed ? rest : null
    length = rest.length
  }
  if (bytes === null) return null
  const text = bytes.toString('utf8')
  let body: unknown = text
  try { body = text === '' ? null : JSON.parse(text) } catch {}
  return { answer: { status, headers, rawHeaders, body, text, answered: true }, end: headerEnd + 4 + length }
}

/**
 * Every complete answer in `data`, in order (a pipelined conversation), and what is
 * left after them. `heads`: the places of answers to HEAD requests, which have no body.
 */
export function parseAnswers (data: Buffer, closed: boolean, heads: ReadonlySet<number> = new Set()): { answers: SocketAnswer[], rest: Buffer } {
  const answers: SocketAnswer[] = []
  let rest = data
  for (;;) {
    const found = parseAnswerAt(rest, closed, heads.has(answers.length))
    if (found === null) return { answers, rest }
    answers.push(found.answer)
    rest = rest.subarray(found.end)
  }
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

/** What happened on one connection: its answers in order, and how it ended. */
export interface Conversation {
  answers: SocketAnswer[]
  /** The server closed the connection (FIN) within the wait. */
  closed: boolean
  /** The connection was reset (ECONNRESET) within the wait. */
  reset: boolean
  /** Answers complete before the connection was closed or reset. */
  answeredBeforeEnd: number
}

/**
 * One connection, several requests: writes `pieces` in order (all at once when no
 * `gapMs`), then waits until `expected` answers are complete and, with `untilClosed`,
 * the server has closed the connection, or `timeoutMs` has passed. Pipelined requests
 * are simply written back to back.
 */
export async function converse (url: string, pieces: Buffer[], options: { expected: number, timeoutMs?: number, untilClosed?: boolean, gapMs?: number, heads?: ReadonlySet<number> }): Promise<Conversation> {
  const { hostname, port } = new URL(url)
  const socket = connect({ host: hostname, port: Number(port) })
  socket.setNoDelay(true)
  let data = Buffer.alloc(0)
  let answers: SocketAnswer[] = []
  let closed = false
  let reset = false
  let answeredBeforeEnd = -1
  return await new Promise((resolve, reject) => {
    let settled = false
    const finish = (): void => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      socket.destroy()
      resolve({ answers, closed, reset, answeredBeforeEnd: answeredBeforeEnd === -1 ? answers.length : answeredBeforeEnd })
    }
    const check = (): void => {
      answers = parseAnswers(data, closed, options.heads).answers
      if (answers.length >= options.expected && (options.untilClosed !== true || closed || reset)) finish()
    }
    const timer = setTimeout(finish, options.timeoutMs ?? 5_000)
    socket.on('data', (chunk: Buffer) => { data = Buffer.concat([data, chunk]); check() })
    const ended = (): void => {
      if (answeredBeforeEnd === -1) answeredBeforeEnd = parseAnswers(data, true, options.heads).answers.length
      check()
    }
    socket.on('end', () => { closed = true; ended() })
    socket.on('close', () => { closed = true; ended(); finish() })
    socket.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'ECONNRESET') reset = true
      else if (err.code !== 'EPIPE' && !settled) { settled = true; clearTimeout(timer); reject(err); return }
      ended()
    })
    socket.once('connect', () => {
      if (options.gapMs === undefined) {
        for (const piece of pieces) socket.write(piece)
        return
      }
      let i = 0
      const next = (): void => {
        const piece = pieces[i++]
        if (piece === undefined || socket.destroyed) return
        socket.write(piece)
        setTimeout(next, options.gapMs)
      }
      next()
    })
  })
}
