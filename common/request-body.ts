import type { ServerResponse } from 'node:http'
import type { Readable } from 'node:stream'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { BodyBudget, BodyHolding } from './body-budget.js'
import { CommonDetails, CommonProblems } from './problem.js'

/** A body's first buffer: a declared length is a claim, not bytes received. */
const INITIAL_CAPACITY_BYTES = 16 * 1024

/** The client went away (or its request timed out) before the body was complete: nobody is left to answer. */
export function abortedError (): Error {
  return Object.assign(new Error('the request body was not received in full'), { statusCode: 400 })
}

/**
 * Where a body's bytes go while they arrive. Every buffer is paid for by the holding
 * before it is allocated, so what is charged is what is held, however small the chunks
 * (a body dripped a byte at a time would otherwise hold an object per byte). And no
 * buffer is outgrown and dropped while the body is still coming: a dropped buffer is
 * garbage the budget no longer counts until the collector frees it, and a stalled body
 * would leave its garbage behind for every one it grew.
 *
 * - With a declared length: 16 KiB first; once the body outgrows it the bytes are
 *   arriving, so the declared length is believed and allocated at once (one copy).
 * - Chunked: segments, each as large as all the earlier ones together (so at most twice
 *   the bytes received are charged), joined once the body is complete.
 */
class BodyBuffer {
  private readonly segments: Buffer[] = []
  private capacity = 0
  size = 0

  constructor (private readonly declaredLength: number | undefined, private readonly ceiling: number, private readonly holding: BodyHolding) {}

  /** Appends `bytes`; false when the holding cannot pay for the room they need. */
  append (bytes: Buffer): boolean {
    let offset = 0
    while (offset < bytes.length) {
      let last = this.segments.at(-1)
      let used = this.usedOf(last)
      if (last === undefined || used === last.length) {
        if (!this.addRoom(bytes.length - offset)) return false
        last = this.segments.at(-1) as Buffer
        used = this.usedOf(last)
      }
      const copied = bytes.copy(last, used, offset)
      offset += copied
      this.size += copied
    }
    return true
  }

  /** The body, in one buffer. */
  bytes (): Buffer {
    if (this.segments.length === 1) return (this.segments[0] as Buffer).subarray(0, this.size)
    return Buffer.concat(this.segments, this.size)
  }

  private usedOf (segment: Buffer | undefined): number {
    return segment === undefined ? 0 : this.size - (this.capacity - segment.length)
  }

  private addRoom (wanted: number): boolean {
    if (this.capacity === 0) return this.addSegment(Math.max(wanted, Math.min(INITIAL_CAPACITY_BYTES, this.ceiling)))
    if (this.declaredLength !== undefined) return this.regrow(Math.max(this.size + wanted, this.ceiling))
    return this.addSegment(Math.max(wanted, Math.min(this.capacity, this.ceiling - this.capacity)))
  }

  private addSegment (bytes: number): boolean {
    if (!this.holding.grow(bytes)) return false
    this.segments.push(Buffer.allocUnsafeSlow(bytes))
    this.capacity += bytes
    return true
  }

  /** One buffer of `bytes` in place of the first (declared lengths only: there is one segment). */
  private regrow (bytes: number): boolean {
    const first = this.segments[0] as Buffer
    if (!this.holding.grow(bytes - first.length)) return false
    const grown = Buffer.allocUnsafeSlow(bytes)
    first.copy(grown, 0, 0, this.size)
    this.segments[0] = grown
    this.capacity = bytes
    return true
  }
}

/**
 * Reads a request body whole, refusing it (413 `body_too_large`) as soon as it is
 * known to exceed `limitBytes`: at once when Content-Length says so, otherwise at the
 * chunk that crosses the limit (chunked bodies included). The bytes are held in a
 * BodyBuffer charged to `holding`; one the holding cannot pay for is refused with 503
 * `bodies_at_capacity`, and no more of it is read. On any failure the holding is
 * released here; on success it stays charged until its owner releases it.
 */
export async function readBodyInto (payload: Readable, declaredLength: number | undefined, limitBytes: number, holding: BodyHolding): Promise<Buffer> {
  if (declaredLength !== undefined && declaredLength > limitBytes) {
    holding.release()
    throw CommonProblems.bodyTooLarge([limitBytes])
  }
  const body = new BodyBuffer(declaredLength, Math.min(declaredLength ?? limitBytes, limitBytes), holding)
  return await new Promise((resolve, reject) => {
    const stop = (): void => {
      payload.removeListener('data', onData)
      payload.removeListener('end', onEnd)
      payload.removeListener('error', onError)
      payload.removeListener('close', onClose)
    }
    const fail = (error: Error): void => {
      stop()
      // No more of a refused body is read: what the client still sends waits in the kernel until the connection closes.
      payload.pause()
      holding.release()
      reject(error)
    }
    function onData (chunk: Buffer | string): void {
      const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk
      if (body.size + bytes.length > limitBytes) { fail(CommonProblems.bodyTooLarge([limitBytes])); return }
      if (!body.append(bytes)) fail(CommonProblems.bodiesAtCapacity())
    }
    function onEnd (): void {
      if (declaredLength !== undefined && body.size !== declaredLength) {
        fail(CommonProblems.validationFailed([CommonDetails.contentLengthMismatch]))
        return
      }
      stop()
      resolve(body.bytes())
    }
    function onError (): void { fail(abortedError()) }
    function onClose (): void { fail(abortedError()) }
    // Gone before its body was read (its connection was closed): no event would come.
    if (payload.destroyed) { fail(abortedError()); return }
    payload.on('data', onData)
    payload.on('end', onEnd)
    payload.on('error', onError)
    payload.on('close', onClose)
    payload.resume()
  })
}

/** Reads the body of `request` within `limitBytes`, charged to `budget` until its answer is done. */
export type BufferedBodyReader = (request: FastifyRequest, payload: Readable, limitBytes: number, budget: BodyBudget) => Promise<Buffer>

/**
 * For content-type parsers of `app` (and of its child contexts): reads a body with
 * readBodyInto, charged to a budget from its first byte until the answer to its request
 * is finished or its connection closes (the response's `close`, which comes in every
 * case). A preParsing hook notes each request's response for that.
 */
export function bufferedBodyReader (app: FastifyInstance): BufferedBodyReader {
  // Once per app tree: a plugin's reader inside a Portier app relies on the app's hook.
  if (!app.hasDecorator(RESPONSE_NOTED)) {
    app.decorate(RESPONSE_NOTED, true)
    app.addHook('preParsing', (request, reply, payload, done) => {
      // A property, not a WeakMap entry: an entry per request would keep each request and
      // its response alive through the garbage collector's minor cycles (ephemerons are
      // settled only by a full collection), and a busy gateway would spend its time there.
      (request as RequestWithResponse)[RESPONSE] = reply.raw
      done(null, payload)
    })
  }
  return async (request, payload, limitBytes, budget) => {
    const holding = budget.hold()
    const response = (request as RequestWithResponse)[RESPONSE]
    if (response === undefined || response.closed) {
      holding.release()
      throw abortedError()
    }
    response.once('close', holding.release)
    const length = request.headers['content-length']
    // A body larger than the whole budget could never be held: that is a 413, not a 503 to retry.
    return await readBodyInto(payload, length === undefined ? undefined : Number(length), Math.min(limitBytes, budget.capacityBytes), holding)
  }
}

/** Where the preParsing hook notes a request's response, for the body reader. */
const RESPONSE = Symbol('portier.response')
/** Set on an instance (and its children) once the hook is installed. */
const RESPONSE_NOTED = 'portierResponseNoted'
type RequestWithResponse = FastifyRequest & { [RESPONSE]?: ServerResponse }
