import { PassThrough, type Readable } from 'node:stream'
import type { FastifyReply } from 'fastify'
import { GatewayDetails, GatewayProblems } from '../errors.js'
import { JsonKeyRewriter, type RenameTable } from '../inflection/index.js'
import { createDecoder, upstreamBodyProblem } from './json-bodies.js'

export interface InflectedResponseOptions {
  /** Renames the upstream's names to the client's style (KeySpellings.responseTable). */
  table: RenameTable
  /** The upstream's content-encoding, lower-cased ('' when none). */
  encoding: string
  maxDepth: number
  maxMembers: number | undefined
  /** Most decoded bytes inflected; undefined for no limit. */
  maxBytes: number | undefined
  /** Output held before the answer starts streaming (see below). */
  holdBytes: number
  upstreamName: string
}

/**
 * Sends an upstream's JSON body with its member names renamed, chunk by chunk as it
 * arrives: each chunk is rewritten in its own turn of the event loop, and memory per
 * response stays bounded whatever the body's size.
 *
 * Up to `holdBytes` of output is held, and a body that ends within it is sent whole with
 * a Content-Length, so that an upstream's invalid JSON is a 502 problem before the client
 * sees a byte. A larger body streams from then on (chunked); if it turns out invalid, or
 * the upstream fails, the response is cut, as a truncated upstream answer would be: the
 * status has been sent, and a client that reads a cut body sees a network error, never a
 * body that parses.
 */
export function sendInflectedResponse (reply: FastifyReply, upstream: Readable, options: InflectedResponseOptions): void {
  const rewriter = new JsonKeyRewriter(options.table, { maxDepth: options.maxDepth, ...(options.maxMembers !== undefined ? { maxMembers: options.maxMembers } : {}) })
  const decoder = createDecoder(options.encoding)
  const source: Readable = decoder === undefined ? upstream : upstream.pipe(decoder)
  let held: Buffer[] = []
  let heldBytes = 0
  let received = 0
  let out: PassThrough | undefined
  let settled = false

  const stopReading = (): void => {
    settled = true
    source.removeListener('data', onData)
    upstream.destroy()
    decoder?.destroy()
  }

  const fail = (problem: unknown): void => {
    if (settled) return
    stopReading()
    if (out !== undefined) {
      out.destroy(problem instanceof Error ? problem : new Error('inflection failed'))
      return
    }
    clearBodyHeaders(reply)
    reply.send(problem)
  }

  const startStreaming = (): void => {
    const stream = new PassThrough()
    out = stream
    stream.on('drain', () => { source.resume() })
    // The client went away (or the stream was cut): nothing more to read.
    stream.on('close', () => { if (!settled) stopReading() })
    for (const chunk of held) stream.write(chunk)
    held = []
    // Chunked from here on: a cut then reads as one at the client, and the connection stays reusable.
    reply.removeHeader('content-encoding')
    reply.removeHeader('content-length')
    reply.send(stream)
  }

  function onData (chunk: Buffer): void {
    received += chunk.length
    if (options.maxBytes !== undefined && received > options.maxBytes) {
      fail(GatewayProblems.upstreamBodyNotInflectable([GatewayDetails.upstreamBodyTooLarge(options.maxBytes)]))
      return
    }
    let rewritten: Buffer
    try {
      rewritten = rewriter.push(chunk)
    } catch (err) {
      fail(upstreamBodyProblem(err, options))
      return
    }
    if (out !== undefined) {
      if (rewritten.length > 0 && !out.write(rewritten)) source.pause()
      return
    }
    held.push(rewritten)
    heldBytes += rewritten.length
    if (heldBytes > options.holdBytes) startStreaming()
  }

  source.on('data', onData)
  source.once('end', () => {
    if (settled) return
    try {
      rewriter.end()
    } catch (err) {
      fail(upstreamBodyProblem(err, options))
      return
    }
    settled = true
    if (out !== undefined) {
      out.end()
      return
    }
    const body = held.length === 1 ? held[0] as Buffer : Buffer.concat(held, heldBytes)
    clearBodyHeaders(reply)
    reply.header('content-length', body.length)
    reply.send(body)
  })
  upstream.once('error', () => { fail(GatewayProblems.upstreamUnavailable([options.upstreamName])) })
  decoder?.once('error', () => {
    fail(GatewayProblems.upstreamBodyNotInflectable([GatewayDetails.upstreamBodyUndecodable(options.encoding)]))
  })
}

/**
 * The upstream's framing and encoding no longer describe the body the client gets. (Not
 * for a streamed answer: removing transfer-encoding stops Node from chunking it.)
 */
function clearBodyHeaders (reply: FastifyReply): void {
  reply.removeHeader('content-encoding')
  reply.removeHeader('content-length')
  reply.removeHeader('transfer-encoding')
}
