import type { Socket } from 'node:net'
import type { IncomingHttpHeaders, ServerResponse } from 'node:http'

/**
 * Bytes written to `socket` so far, whether handed to the OS or still queued: what
 * `socket.bytesWritten` says, without the copy of the queue its getter makes on every
 * read (the access line reads it twice a request, on the gateway's hot path).
 */
export function bytesSentOn (socket: Socket | null | undefined): number {
  if (socket == null) return 0
  const dispatched = (socket as Socket & { _bytesDispatched?: number })._bytesDispatched
  const sent = dispatched === undefined ? socket.bytesWritten : dispatched + socket.writableLength
  // An injected request's stand-in socket (light-my-request) counts nothing.
  return Number.isFinite(sent) ? sent : 0
}

/**
 * The body bytes of an answer: what was written on its connection since `sentBefore`
 * (bytesSentOn of its request's socket when the request arrived: a response's own
 * socket is detached once it is sent), less its status line and header block.
 * So it is what was sent, not what was meant to be: a body cut short counts what got
 * out. A chunked answer counts its chunk framing too (a few bytes per chunk).
 */
export function responseBodyBytes (response: ServerResponse, sentBefore: number): number {
  const head = (response as ServerResponse & { _header?: string | null })._header
  // Header blocks are written as latin1: one byte per character.
  const sent = bytesSentOn(response.req.socket) - sentBefore - (head == null ? 0 : head.length)
  return sent > 0 ? sent : 0
}

/** The body bytes a request declares (Content-Length, which Node has checked is digits); 0 without one. */
export function declaredBodyBytes (headers: IncomingHttpHeaders): number {
  const length = headers['content-length']
  return length === undefined ? 0 : Number(length)
}
