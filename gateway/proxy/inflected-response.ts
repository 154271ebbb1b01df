import type { ServerResponse } from 'node:http'
import type { Transform } from 'node:stream'
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

/** What the inflected body reports to the exchange it belongs to. */
export interface InflectedResponseEvents {
  /** The body cannot be inflected before a byte was sent: the exchange answers this problem instead. */
  refuse: (problem: unknown) => void
  /** Stop and restart the upstream's flow (its bytes are coming faster than the client takes them). */
  pause: () => void
  resume: () => void
}

/**
 * An upstream's JSON body sent with its member names renamed, chunk by chunk as it
 * arrives: each chunk is rewritten as it comes, and memory per response stays bounded
 * whatever the body's size.
 *
 * Up to `holdBytes` of output is held, and a body that ends within it is sent whole with
 * a Content-Length, so that an upstream's invalid JSON is a 502 problem before the client
 * sees a byte. A larger body streams from then on (chunked); if it turns out invalid, or
 * the upstream fails, the response is cut, as a truncated upstream answer would be: the
 * status has been sent, and a client that reads a cut body sees a network error, never a
 * body that parses.
 */
export class InflectedResponse {
  readonly #response: ServerResponse
  readonly #status: number
  readonly #headers: string[]
  readonly #options: InflectedResponseOptions
  readonly #events: InflectedResponseEvents
  readonly #rewriter: JsonKeyRewriter
  readonly #decoder: Transform | undefined
  #held: Buffer[] = []
  #heldBytes = 0
  #received = 0
  #streaming = false
  #settled = false

  /** `headers`: the answer's, without the upstream's framing (Content-Length, Content-Encoding). */
  constructor (response: ServerResponse, status: number, headers: string[], options: InflectedResponseOptions, events: InflectedResponseEvents) {
    this.#response = response
    this.#status = status
    this.#headers = headers
    this.#options = options
    this.#events = events
    this.#rewriter = new JsonKeyRewriter(options.table, { maxDepth: options.maxDepth, ...(options.maxMembers !== undefined ? { maxMembers: options.maxMembers } : {}) })
    this.#decoder = createDecoder(options.encoding)
    if (this.#decoder !== undefined) {
      const decoder = this.#decoder
      decoder.on('data', (chunk: Buffer) => { this.#take(chunk) })
      decoder.once('end', () => { this.#finish() })
      decoder.once('error', () => {
        this.#fail(GatewayProblems.upstreamBodyNotInflectable([GatewayDetails.upstreamBodyUndecodable(options.encoding)]))
      })
      decoder.on('drain', () => { if (!this.#settled) events.resume() })
    }
    // Streaming: the client took what was waiting, the upstream may send more.
    response.on('drain', () => { if (!this.#settled) events.resume() })
  }

  /** A chunk of the upstream's body, as it came (encoded or not). */
  write (chunk: Buffer): void {
    if (this.#settled) return
    if (this.#decoder === undefined) {
      this.#take(chunk)
      return
    }
    if (!this.#decoder.write(chunk)) this.#events.pause()
  }

  /** The upstream's body ended. */
  end (): void {
    if (this.#settled) return
    if (this.#decoder === undefined) this.#finish()
    else this.#decoder.end()
  }

  /** The upstream failed mid-body. */
  fail (): void {
    this.#fail(GatewayProblems.upstreamUnavailable([this.#options.upstreamName]))
  }

  #take (chunk: Buffer): void {
    if (this.#settled) return
    this.#received += chunk.length
    const { maxBytes } = this.#options
    if (maxBytes !== undefined && this.#received > maxBytes) {
      this.#fail(GatewayProblems.upstreamBodyNotInflectable([GatewayDetails.upstreamBodyTooLarge(maxBytes)]))
      return
    }
    let rewritten: Buffer
    try {
      rewritten = this.#rewriter.push(chunk)
    } catch (err) {
      this.#fail(upstreamBodyProblem(err, this.#options))
      return
    }
    if (this.#streaming) {
      if (rewritten.length > 0 && !this.#response.write(rewritten)) this.#events.pause()
      return
    }
    this.#held.push(rewritten)
    this.#heldBytes += rewritten.length
    if (this.#heldBytes > this.#options.holdBytes) this.#startStreaming()
  }

  /** Chunked from here on: a cut then reads as one at the client, and the connection stays reusable. */
  #startStreaming (): void {
    this.#streaming = true
    this.#response.writeHead(this.#status, this.#headers)
    for (const chunk of this.#held) this.#response.write(chunk)
    this.#held = []
  }

  #finish (): void {
    if (this.#settled) return
    try {
      this.#rewriter.end()
    } catch (err) {
      this.#fail(upstreamBodyProblem(err, this.#options))
      return
    }
    this.#settled = true
    if (this.#streaming) {
      this.#response.end()
      return
    }
    const body = this.#held.length === 1 ? this.#held[0] as Buffer : Buffer.concat(this.#held, this.#heldBytes)
    this.#headers.push('content-length', String(body.length))
    this.#response.writeHead(this.#status, this.#headers)
    this.#response.end(body)
  }

  #fail (problem: unknown): void {
    if (this.#settled) return
    this.#settled = true
    this.#decoder?.destroy()
    if (this.#streaming) {
      this.#response.destroy(problem instanceof Error ? problem : new Error('inflection failed'))
      return
    }
    this.#events.refuse(problem)
  }
}
