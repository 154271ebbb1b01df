import { createBrotliDecompress, createGunzip, createInflate, type Gunzip } from 'node:zlib'
import type { Transform } from 'node:stream'
import { CommonProblems } from '../../common/problem.js'
import { GatewayDetails, GatewayProblems } from '../errors.js'
import {
  countMembers, DuplicateNameError, InflectionDepthError, InflectionMembersError, JsonKeyRewriter, JsonSyntaxError, type RenameTable
} from '../inflection/index.js'

const JSON_CONTENT_TYPE = /^application\/(?:[\w.+-]+\+)?json(?:\s*;|$)/i

/** application/json and any `+json` type (problem+json included). */
export function isJsonContentType (contentType: unknown): boolean {
  return typeof contentType === 'string' && JSON_CONTENT_TYPE.test(contentType)
}

const decoders: Record<string, () => Transform | Gunzip> = {
  gzip: createGunzip,
  'x-gzip': createGunzip,
  deflate: createInflate,
  br: createBrotliDecompress
}

/** Whether we can decode this content-encoding ('' or identity: nothing to decode). */
export function canDecode (encoding: string): boolean {
  return encoding === '' || encoding === 'identity' || decoders[encoding] !== undefined
}

/** A streaming decoder for `encoding`, or undefined when the body is not encoded. */
export function createDecoder (encoding: string): Transform | undefined {
  return decoders[encoding]?.()
}

/**
 * A client's JSON body, with its member names in the upstream's spelling (`table`, from
 * KeySpellings.requestTable). Refused when it is not JSON (400 malformed_json), nests
 * deeper than `maxDepth`, has more than `maxMembers` members, or has two members of one
 * object that would reach the upstream under one name: which of the two an upstream
 * keeps depends on its parser, so the gateway does not guess.
 *
 * Members are counted on the bytes first: a body of thousands of distinct names would
 * otherwise cost a conversion per name up to the limit (and fill the request table with
 * names no upstream sent) before it is refused.
 */
export function rewriteRequestBody (body: Buffer, table: RenameTable, maxDepth: number, maxMembers: number): Buffer {
  if (countMembers(body, maxMembers) > maxMembers) throw GatewayProblems.bodyTooWide([maxMembers])
  try {
    return new JsonKeyRewriter(table, { maxDepth, maxMembers, uniqueNames: true }).rewriteAll(body)
  } catch (err) {
    if (err instanceof JsonSyntaxError) throw CommonProblems.malformedJson()
    if (err instanceof InflectionDepthError) throw GatewayProblems.bodyTooDeep([maxDepth])
    if (err instanceof InflectionMembersError) throw GatewayProblems.bodyTooWide([maxMembers])
    if (err instanceof DuplicateNameError) throw GatewayProblems.duplicateMember()
    throw err
  }
}

/** What an upstream body that cannot be inflected is answered with, by the rewriter's error. */
export function upstreamBodyProblem (err: unknown, limits: { maxDepth: number, maxMembers?: number | undefined }): unknown {
  if (err instanceof JsonSyntaxError) return GatewayProblems.upstreamBodyNotInflectable([GatewayDetails.upstreamBodyNotJson])
  if (err instanceof InflectionDepthError) return GatewayProblems.upstreamBodyNotInflectable([GatewayDetails.upstreamBodyTooDeep(limits.maxDepth)])
  if (err instanceof InflectionMembersError) return GatewayProblems.upstreamBodyNotInflectable([GatewayDetails.upstreamBodyTooWide(err.maxMembers)])
  return err
}

/**
 * A JSON body the gateway wrote itself (a problem), renamed by the same rewriter as the
 * bodies it forwards. `keep` lists the top-level names that keep their spelling.
 */
export function rewriteGatewayBody (text: string, table: RenameTable, keep?: ReadonlySet<string>): Buffer {
  return new JsonKeyRewriter(table, keep === undefined ? {} : { keepTopLevel: keep }).rewriteAll(Buffer.from(text, 'utf8'))
}
