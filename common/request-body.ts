import type { ServerResponse } from 'node:http'
import type { Readable } from 'node:stream'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { BodyBudget, BodyHolding } from './body-budget.js'
import { CommonProblems } from './problem.js'

/** A body's buffer starts this small and doubles: a declared length is a claim, not bytes received. */
const INITIAL_CAPACITY_BYTES = 16 * 1024
const EMPTY = Buffer.alloc(0)

/** The client went away (or its request timed out) before the body was complete: nobody is left to answer. */
function abortedError (): Error {
  return Object.assign(new Error('the request body was not received in full'), { statusCode: 400 })
}

/**
 * Reads a request body whole, refusing it (413 `body_too_large`) as soon as it is
 * known to exceed `limitBytes`: at once when Content-Length says so, otherwise at the
 * chunk that crosses the limit (chunked bodies included). Chunks are copied into one
 * buffer that doubles as needed, and the buffer's whole size is taken from `holding`
 * before it is allocated, so what is charged is what is held, however small the chunks
 * (a body dripped a byte at a time would otherwise hold an object per byte). A buffer
 * the holding cannot pay for is refused with 503 `bodies_at_capacity`. On any failure
 * the holding is released here; on success it stays charged until its owner releases it.
 */
export async function readBodyInto (payload: Readable, declaredLength: number | undefined, limitBytes: number, holding: BodyHolding): Promise<Buffer> {
  if (declaredLength !== undefined && declaredLength > limitBytes) {
    holding.release()
    throw CommonProblems.bodyTooLarge([limitBytes])
  }
  const ceiling = Math.min(declaredLength ?? limitBytes, limitBytes)
  return await new Promise((resolve, reject) => {
    let buffer = EMPTY
    let size = 0
    const stop = (): void => {
      payload.removeListener('data', onData)
      payload.removeListener('end', onEnd)
      payload.removeListener('error', onError)
      payload.removeListener('close', onClose)
    }
    const fail = (error: Error): void => {
      stop()
      buffer = EMPTY
      holding.release()
      reject(error)
    }
    function onData (chunk: Buffer | string): void {
      const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk
      const needed = size + bytes.length
      if (needed > limitBytes) { fail(CommonProblems.bodyTooLarge([limitBytes])); return }
      if (needed > buffer.length) {
        const capacity = Math.max(needed, Math.min(Math.max(buffer.length * 2, INITIAL_CAPACITY_BYTES), ceiling))
        if (!holding.grow(capacity - buffer.length)) { fail(CommonProblems.bodiesAtCapacity()); return }
        const grown = Buffer.allocUnsafeSlow(capacity)
        buffer.copy(grown, 0, 0, size)
        buffer = grown
      }
      bytes.copy(buffer, size)
      size = needed
    }
    function onEnd (): void {
      if (declaredLength !== undefined && size !== declaredLength) {
        fail(CommonProblems.validationFailed(['Content-Length does not match the body.']))
        return
      }
      stop()
      resolve(buffer.subarray(0, size))
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

/** Reads the body of `request` within `limitBytes`, charged to the budget until its answer is done. */
export type BufferedBodyReader = (request: FastifyRequest, payload: Readable, limitBytes: number) => Promise<Buffer>

/**
 * For content-type parsers of `app` (and of its child contexts): reads a body with
 * readBodyInto, charged to `budget` from its first byte until the answer to its request
 * is finished or its connection closes (the response's `close`, which comes in every
 * case). A preParsing hook notes each request's response for that.
 */
export function bufferedBodyReader (app: FastifyInstance, budget: BodyBudget): BufferedBodyReader {
  const responses = new WeakMap<FastifyRequest, ServerResponse>()
  app.addHook('preParsing', (request, reply, payload, done) => {
    responses.set(request, reply.raw)
    done(null, payload)
  })
  return async (request, payload, limitBytes) => {
    const holding = budget.hold()
    const response = responses.get(request)
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
