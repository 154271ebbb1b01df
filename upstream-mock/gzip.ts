import type { FastifyInstance } from 'fastify'
import { promisify } from 'node:util'
import { gzip as gzipCallback } from 'node:zlib'

export const gzip = promisify(gzipCallback)

const JSON_TYPE = /^application\/(?:[\w.-]+\+)?json\b/i

/**
 * RFC 9110 §12.5.3: gzip is acceptable when listed (or covered by `*`) with a
 * non-zero weight. An explicit `gzip;q=0` wins over `*`.
 */
export function acceptsGzip (acceptEncoding: string | undefined): boolean {
  let wildcard = false
  for (const entry of (acceptEncoding ?? '').split(',')) {
    const [coding = '', ...params] = entry.split(';').map((part) => part.trim().toLowerCase())
    const weight = params.find((p) => p.startsWith('q='))
    const accepted = weight === undefined || Number(weight.slice(2)) > 0
    if (coding === 'gzip' || coding === 'x-gzip') return accepted
    if (coding === '*') wildcard = accepted
  }
  return wildcard
}

/**
 * JSON answers are gzip-compressed when, and only when, the request accepts gzip, as
 * a well-behaved upstream does; a gateway that asks for `identity` gets plain JSON.
 * Answers that already carry a Content-Encoding (GET /gzip) are left alone.
 */
export function installGzipResponses (app: FastifyInstance): void {
  app.addHook('onSend', async (request, reply, payload) => {
    if (reply.hasHeader('content-encoding') || !JSON_TYPE.test(String(reply.getHeader('content-type') ?? ''))) return payload
    if (typeof payload !== 'string' && !Buffer.isBuffer(payload)) return payload
    const vary = reply.getHeader('vary')
    reply.header('vary', vary === undefined ? 'accept-encoding' : `${String(vary)}, accept-encoding`)
    if (payload.length === 0 || !acceptsGzip(request.headers['accept-encoding'])) return payload
    reply.header('content-encoding', 'gzip')
    reply.removeHeader('content-length')
    return await gzip(payload)
  })
}
