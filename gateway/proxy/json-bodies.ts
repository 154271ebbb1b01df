import { promisify } from 'node:util'
import { brotliDecompress, gunzip, inflate } from 'node:zlib'
import type { Readable } from 'node:stream'
import { CommonProblems } from '../../common/problem.js'
import { GatewayDetails, GatewayProblems } from '../errors.js'
import { countMembers, InflectionDepthError, InflectionMembersError, inflectOwnedKeys, keyConverter, type KeyCase } from '../inflection/index.js'

const JSON_CONTENT_TYPE = /^application\/(?:[\w.+-]+\+)?json(?:\s*;|$)/i

/** application/json and any `+json` type (problem+json included). */
export function isJsonContentType (contentType: unknown): boolean {
  return typeof contentType === 'string' && JSON_CONTENT_TYPE.test(contentType)
}

const decoders: Record<string, (input: Buffer, options: { maxOutputLength: number }) => Promise<Buffer>> = {
  gzip: promisify(gunzip),
  'x-gzip': promisify(gunzip),
  deflate: promisify(inflate),
  br: promisify(brotliDecompress)
}

/** Whether we can decode this content-encoding ('' or identity: nothing to decode). */
export function canDecode (encoding: string): boolean {
  return encoding === '' || encoding === 'identity' || decoders[encoding] !== undefined
}

/** Reads a response stream whole, refusing more than `limit` bytes. */
export async function readBody (stream: Readable, limit: number): Promise<Buffer> {
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of stream) {
    size += (chunk as Buffer).length
    if (size > limit) {
      stream.destroy()
      throw GatewayProblems.upstreamBodyNotInflectable([GatewayDetails.upstreamBodyTooLarge(limit)])
    }
    chunks.push(chunk as Buffer)
  }
  return Buffer.concat(chunks, size)
}

export async function decode (body: Buffer, encoding: string, limit: number): Promise<Buffer> {
  const decoder = decoders[encoding]
  if (decoder === undefined) return body
  try {
    return await decoder(body, { maxOutputLength: limit })
  } catch {
    throw GatewayProblems.upstreamBodyNotInflectable([GatewayDetails.upstreamBodyUndecodable(encoding, limit)])
  }
}

/** The most object members of an upstream body the gateway inflects unless told otherwise (the plugin's default). */
export const DEFAULT_MAX_INFLECTED_RESPONSE_MEMBERS = 1_000_000

interface InflectionLimits { maxDepth: number, maxMembers: number }
interface InflectionProblems { badJson: () => Error, tooDeep: () => Error, tooWide: () => Error }

/**
 * Parses JSON text and converts every key to `style`. Bad JSON, excessive depth and too
 * many members become the caller's `problems`, so that requests (400) and responses
 * (502) answer differently.
 */
function inflectText (text: string, style: KeyCase, limits: InflectionLimits, problems: InflectionProblems): string {
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch {
    throw problems.badJson()
  }
  try {
    // `parsed` is ours alone: it may be converted in place.
    return JSON.stringify(inflectOwnedKeys(parsed, keyConverter(style), limits))
  } catch (err) {
    if (err instanceof InflectionDepthError) throw problems.tooDeep()
    if (err instanceof InflectionMembersError) throw problems.tooWide()
    throw err
  }
}

/**
 * A client's JSON body, converted to the upstream's native key case. Its members are
 * counted on the bytes first: a body wider than `maxMembers` is refused before the
 * parse, which for a megabyte of distinct names costs more than the count.
 */
export function inflectRequestBody (body: Buffer, nativeCase: KeyCase, maxDepth: number, maxMembers: number): string {
  const tooWide = (): Error => GatewayProblems.bodyTooWide([maxMembers])
  if (countMembers(body, maxMembers) > maxMembers) throw tooWide()
  return inflectText(body.toString('utf8'), nativeCase, { maxDepth, maxMembers }, {
    badJson: () => CommonProblems.malformedJson(),
    tooDeep: () => GatewayProblems.bodyTooDeep([maxDepth]),
    tooWide
  })
}

/** An upstream's JSON body, converted to the style the client asked for. */
export function inflectResponseBody (body: Buffer, style: KeyCase, maxDepth: number, maxMembers: number = DEFAULT_MAX_INFLECTED_RESPONSE_MEMBERS): string {
  return inflectText(body.toString('utf8'), style, { maxDepth, maxMembers }, {
    badJson: () => GatewayProblems.upstreamBodyNotInflectable([GatewayDetails.upstreamBodyNotJson]),
    tooDeep: () => GatewayProblems.upstreamBodyNotInflectable([GatewayDetails.upstreamBodyTooDeep(maxDepth)]),
    tooWide: () => GatewayProblems.upstreamBodyNotInflectable([GatewayDetails.upstreamBodyTooWide(maxMembers)])
  })
}
