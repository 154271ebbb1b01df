import { connect, type Socket } from 'node:net'

/**
 * Clients that never finish their request: they send a head (and maybe part of a
 * body), then stall or drip a byte at a time. Each records when the server closed the
 * connection and what it answered, so a suite can assert "cut within the timeout, with
 * a 408 problem" for hundreds of them at once.
 */

export interface StallOutcome {
  label: string
  /** From the first byte written to the server's close; null if it was still open at `giveUpAfterMs`. */
  closedAfterMs: number | null
  /** Every status line the server wrote, in order (a 401 may come before the 408 that cuts the rest). */
  statuses: number[]
  /** The `code` of the last problem body received, if any. */
  code: string | null
  /** The last answer's Retry-After, if any. */
  retryAfter: string | null
}

export interface StalledClient {
  label: string
  socket: Socket
  /** Resolves when the server closes the connection (or after `giveUpAfterMs`, then destroys it). */
  outcome: Promise<StallOutcome>
}

export interface StallOptions {
  /** Stop waiting (and count the connection as still open) after this long. */
  giveUpAfterMs: number
  /** Then write one more byte every `dripEveryMs` until the server closes (never a full stall). */
  dripEveryMs?: number
  /** The byte dripped (default a space, valid inside a JSON body). */
  dripByte?: Buffer
}

function summarise (label: string, data: Buffer, closedAfterMs: number | null): StallOutcome {
  const text = data.toString('latin1')
  const statuses = [...text.matchAll(/HTTP\/1\.1 (\d{3})/g)].map((m) => Number(m[1]))
  const bodies = [...text.matchAll(/\{"type":"urn:portier:problem:[^]*?"code":"([a-z0-9_]+)"/g)]
  const retryAfter = [...text.matchAll(/\r\nretry-after: ([^\r]*)/gi)].at(-1)?.[1] ?? null
  return { label, closedAfterMs, statuses, code: bodies.at(-1)?.[1] ?? null, retryAfter }
}

/** Connects, writes `bytes` (a request head and perhaps part of a body, in pieces: no copy), then stalls or drips. */
export async function openStalled (url: string, label: string, bytes: Buffer | Buffer[], options: StallOptions): Promise<StalledClient> {
  const { hostname, port } = new URL(url)
  const socket = connect({ host: hostname, port: Number(port) })
  socket.setNoDelay(true)
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve)
    socket.once('error', reject)
  })
  const startedAt = performance.now()
  let data = Buffer.alloc(0)
  socket.on('data', (chunk: Buffer) => { data = Buffer.concat([data, chunk]) })
  // Writes into a connection the server has closed fail with EPIPE or ECONNRESET: that is the close we wait for.
  socket.on('error', () => {})
  const outcome = new Promise<StallOutcome>((resolve) => {
    let drip: NodeJS.Timeout | undefined
    const giveUp = setTimeout(() => {
      clearInterval(drip)
      socket.destroy()
      resolve(summarise(label, data, null))
    }, options.giveUpAfterMs)
    socket.once('close', () => {
      clearTimeout(giveUp)
      clearInterval(drip)
      resolve(summarise(label, data, performance.now() - startedAt))
    })
    if (options.dripEveryMs !== undefined) {
      const byte = options.dripByte ?? Buffer.from(' ')
      drip = setInterval(() => { if (socket.writable) socket.write(byte) }, options.dripEveryMs)
    }
  })
  for (const piece of Array.isArray(bytes) ? bytes : [bytes]) socket.write(piece)
  return { label, socket, outcome }
}

/** A request head for a body of `declared` bytes (Content-Length), or chunked when `declared` is 'chunked'. */
export function requestHead (method: string, path: string, host: string, headers: Record<string, string>, declared: number | 'chunked'): string {
  const framing = declared === 'chunked' ? 'transfer-encoding: chunked' : `content-length: ${declared}`
  const lines = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`).join('')
  return `${method} ${path} HTTP/1.1\r\nhost: ${host}\r\naccept: application/json\r\ncontent-type: application/json\r\n${lines}${framing}\r\n\r\n`
}

/** One chunk of a chunked body, in pieces (the terminating zero-size chunk is never sent by a staller). */
export function chunk (bytes: Buffer): Buffer[] {
  return [Buffer.from(`${bytes.length.toString(16)}\r\n`), bytes, Buffer.from('\r\n')]
}
