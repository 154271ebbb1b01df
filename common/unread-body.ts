import type { IncomingMessage } from 'node:http'
import { Socket } from 'node:net'

/**
 * What a listener does with a request body it answers without reading (a refusal
 * before the body, a 413 or 503 part way through it), so that the client reads the
 * answer and, where it is cheap, keeps its connection:
 *
 * - no body at all (no Content-Length above 0, no Transfer-Encoding): nothing to do,
 *   the connection stays open (keep-alive and pipelining go on, in order);
 * - a small body (a declared length up to `drainMaxBytes`): read and thrown away after
 *   the answer, and the connection stays open;
 * - a chunked body of unknown length: read and thrown away up to `drainMaxBytes`
 *   before the answer; if it ended within that, the connection stays open;
 * - anything larger: the answer says `Connection: close`, and once it is written the
 *   connection is closed the way nginx's `lingering_close` does it (see `linger`).
 *
 * Closing a socket whose client is still sending makes the kernel answer with a reset,
 * which can destroy the answer in the client's receive buffer before it reads it: a
 * client sending a large upload would see ECONNRESET instead of its 401 or 503.
 */
export interface UnreadBodyLimits {
  /** A refused body up to this size is read and discarded, and the connection kept. */
  drainMaxBytes: number
  /** Longest a closing connection is read (and what it sends discarded) after its answer. */
  lingerMs: number
  /** Most bytes read from a closing connection after its answer. */
  lingerMaxBytes: number
}

export const DEFAULT_UNREAD_BODY_LIMITS: Readonly<UnreadBodyLimits> = Object.freeze({
  drainMaxBytes: 65_536,
  lingerMs: 5_000,
  lingerMaxBytes: 16 * 1_048_576
})

/** A lingering connection that has sent nothing for this long has nothing more to say. */
const LINGER_IDLE_MS = 1_000
/** How often a lingering connection's reads are looked at. */
const LINGER_CHECK_MS = 100

/** Whether the request declared a body that the parser has not seen the end of. */
export function bodyPending (request: IncomingMessage): boolean {
  if (request.complete) return false
  const length = request.headers['content-length']
  return request.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0')
}

/**
 * How the answer must treat its connection: `none` (no body was left unread), `keep`
 * (the rest is discarded, and the connection kept) or `close`.
 */
export type UnreadBodyOutcome = 'none' | 'keep' | 'close'

/**
 * Decides what becomes of `request`'s unread body before its answer is written, and
 * calls `ready` with the outcome: `keep` means the answer goes out as usual and the body
 * is discarded after it; `close` that the answer must say `Connection: close`, and the
 * socket lingers once it is written. Synchronous except for a chunked body, which is
 * read first.
 */
export function settleUnreadBody (request: IncomingMessage, limits: UnreadBodyLimits, ready: (outcome: UnreadBodyOutcome) => void): void {
  if (!bodyPending(request)) {
    ready('none')
    return
  }
  // Whatever is decided, a connection that closes after this answer (the client asked
  // for it, or HTTP/1.0) closes the lingering way: its body may still be arriving.
  closeWithLinger(request, limits)
  const answer = (outcome: UnreadBodyOutcome): void => {
    if (!request.complete) markAnswered(request)
    ready(outcome)
  }
  const length = request.headers['content-length']
  if (request.headers['transfer-encoding'] === undefined && length !== undefined) {
    if (Number(length) <= limits.drainMaxBytes) {
      discard(request)
      answer('keep')
      return
    }
    answer('close')
    return
  }
  drainChunked(request, limits, answer)
}

/** Reads a chunked body and throws it away, up to the drain limit, then says whether it ended. */
function drainChunked (request: IncomingMessage, limits: UnreadBodyLimits, ready: (outcome: UnreadBodyOutcome) => void): void {
  let read = 0
  let settled = false
  const settle = (outcome: UnreadBodyOutcome): void => {
    if (settled) return
    settled = true
    request.removeListener('data', onData)
    request.removeListener('end', onEnd)
    request.removeListener('close', onClose)
    ready(outcome)
  }
  function onData (chunk: Buffer): void {
    read += chunk.length
    if (read > limits.drainMaxBytes) settle('close')
  }
  const onEnd = (): void => { settle('keep') }
  // Gone before its body ended: the answer has nobody to reach, but it is still sent, and dropped, as usual.
  const onClose = (): void => { settle('close') }
  request.on('data', onData)
  request.once('end', onEnd)
  request.once('close', onClose)
  request.resume()
}

/** Connections whose request in progress was answered before its body arrived in full. */
const answeredEarly = new WeakSet<object>()

/** Notes that `request` has its answer while its body is still arriving, until the body ends. */
function markAnswered (request: IncomingMessage): void {
  const socket = request.socket
  answeredEarly.add(socket)
  request.once('end', () => { answeredEarly.delete(socket) })
}

/**
 * Whether the request in progress on `socket` has been answered already, its body
 * still arriving: if that body is then cut (the request timeout), the connection is
 * closed without another answer, which the client would take for the next request's.
 */
export function answeredBeforeItsBody (socket: object): boolean {
  return answeredEarly.has(socket)
}

/** Throws the rest of a body away as it arrives (Node reads a resumed request with nobody listening into nothing). */
function discard (request: IncomingMessage): void {
  request.removeAllListeners('data')
  request.resume()
}

/**
 * Marks the request's connection to linger when Node closes it after the answer (Node
 * calls `destroySoon` once an answer that said `Connection: close` is written).
 */
function closeWithLinger (request: IncomingMessage, limits: UnreadBodyLimits): void {
  const socket = request.socket
  if (!(socket instanceof Socket) || socket.destroyed) return
  socket.destroySoon = function lingeringClose (): void { linger(socket, limits) }
}

/** Connections closing the lingering way: a request that still arrives on one is not served. */
const lingering = new WeakSet<Socket>()

/** Whether `socket` is closing the lingering way: requests read from it now are dropped unanswered. */
export function isLingering (socket: unknown): boolean {
  return socket instanceof Socket && lingering.has(socket)
}

/**
 * Closes a connection whose client may still be sending, as nginx's lingering close
 * does: the answer is flushed and the write side half-closed (FIN); then whatever the
 * client still sends is read and thrown away (the rest of a body by Node's HTTP parser,
 * which discards it; any request after it is dropped unanswered, see isLingering) until
 * the client closes its side, sends nothing for a second, or passes `lingerMs` or
 * `lingerMaxBytes`. Only then is the socket destroyed, with nothing left unread that
 * would make the kernel send a reset ahead of the answer.
 */
export function linger (socket: Socket, limits: UnreadBodyLimits): void {
  if (socket.destroyed || lingering.has(socket)) return
  lingering.add(socket)
  const startedAt = Date.now()
  const bytesAtStart = socket.bytesRead
  let bytesSeen = bytesAtStart
  let quietSince = startedAt
  const close = (): void => { socket.destroy() }
  // Node reads the socket into its parser: how much arrives is watched from outside, not by taking the socket over.
  const watch = setInterval(() => {
    const now = Date.now()
    const read = socket.bytesRead
    if (read !== bytesSeen) {
      bytesSeen = read
      quietSince = now
    }
    if (now - startedAt >= limits.lingerMs || read - bytesAtStart > limits.lingerMaxBytes || now - quietSince >= Math.min(LINGER_IDLE_MS, limits.lingerMs)) close()
  }, LINGER_CHECK_MS)
  socket.once('end', close)
  socket.once('close', () => { clearInterval(watch) })
  socket.end()
  socket.resume()
}
