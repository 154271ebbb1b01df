import { isUtf8 } from 'node:buffer'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { createBodyBudget, type BodyBudget } from '../../common/body-budget.js'
import { CommonProblems } from '../../common/problem.js'
import { abortedError, readBodyInto } from '../../common/request-body.js'
import type { SpellingBook } from '../inflection/index.js'
import { refuseBodyMethodOverride } from '../method-override.js'
import type { RoutedRequest } from '../routing/route-request.js'
import { isJsonContentType, rewriteRequestBody } from './json-bodies.js'

/** Identity's routes get this fraction (1/n) of the body budget. */
const ANONYMOUS_BUDGET_SHARE = 8

/** Methods whose body, if any, is never read nor forwarded (as Fastify treats them). */
const BODYLESS_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'TRACE'])

export interface RequestBodyOptions {
  /** Largest body of an upstream route unless its upstream sets its own. */
  bodyLimitBytes: number
  /** Largest body of identity's routes, which take no credential at the gateway. */
  identityBodyLimitBytes: number
  /** Body bytes held at once across every request in flight. */
  bufferedBodiesMaxBytes: number
  spellings: SpellingBook
  maxInflectionDepth: number
  maxInflectedRequestMembers: number
}

/**
 * The gateway's body budget, split: an eighth for identity's routes, which take no
 * credential, the rest for upstream routes. So clients with credentials sending large
 * bodies cannot crowd out logins, and anonymous clients cannot crowd out the upstreams.
 */
function createBodyBudgets (totalBytes: number): { anonymous: BodyBudget, authenticated: BodyBudget } {
  const anonymousBytes = Math.floor(totalBytes / ANONYMOUS_BUDGET_SHARE)
  return { anonymous: createBodyBudget(anonymousBytes), authenticated: createBodyBudget(totalBytes - anonymousBytes) }
}

/** The console's forms, as browsers post them (no file uploads). */
const FORM_CONTENT_TYPE = /^application\/x-www-form-urlencoded(?:\s*;|$)/i

/** Whether the request carries a body the gateway reads; throws 415 for one that is not JSON (or, on the console's routes, a form). */
function bodyToRead (request: IncomingMessage, formBodies: boolean): boolean {
  const method = request.method ?? 'GET'
  if (BODYLESS_METHODS.has(method)) return false
  const { headers } = request
  const type = headers['content-type']
  const length = headers['content-length']
  const chunked = headers['transfer-encoding'] !== undefined
  if (type === undefined) {
    if ((length === undefined || length === '0') && !chunked) return false
    throw CommonProblems.unsupportedMediaType()
  }
  if (length === undefined && !chunked && method === 'OPTIONS') return false
  if (!(formBodies ? FORM_CONTENT_TYPE.test(type) : isJsonContentType(type))) throw CommonProblems.unsupportedMediaType()
  // The gateway does not decode content codings: a compressed body (or one that only
  // claims to be) would be forwarded unread and decoded by the upstream alone.
  const encoding = headers['content-encoding']
  if (encoding !== undefined && encoding.trim().toLowerCase() !== 'identity') throw CommonProblems.unsupportedMediaType()
  return true
}

/**
 * The body stage: a request's JSON body as its upstream will receive it, or null for a
 * request without one. Read only now, once every check before it has passed, within
 * its route's limit (identity's small one on identity's routes, the upstream's or the
 * gateway's elsewhere; 413) and the body budget (503 `bodies_at_capacity`), held until
 * the answer is over. It must be UTF-8 (JSON is, RFC 8259 §8.1: other bytes would
 * reach the upstream as U+FFFD); with an inflection its member names are renamed to the
 * upstream's spelling; and a method override in it is refused, checked as the upstream
 * will read it. Anything not JSON is a 415.
 */
export function createRequestBodyStage (options: RequestBodyOptions) {
  const budgets = createBodyBudgets(options.bufferedBodiesMaxBytes)

  function asForwarded (routed: RoutedRequest, body: Buffer): Buffer {
    // A form is the console's to read: forwarded exactly as sent, never renamed.
    if (routed.route.upstream.formBodies === true) return body
    if (!isUtf8(body)) throw CommonProblems.malformedJson()
    if (body.length === 0) return body
    const forwarded = routed.style === null
      ? body
      : rewriteRequestBody(body, options.spellings.of(routed.route.upstream).requestTable(routed.style), options.maxInflectionDepth, options.maxInflectedRequestMembers)
    refuseBodyMethodOverride(forwarded)
    return forwarded
  }

  return function requestBody (routed: RoutedRequest, request: IncomingMessage, response: ServerResponse): Buffer | null | Promise<Buffer> {
    if (!bodyToRead(request, routed.route.upstream.formBodies === true)) return null
    const anonymous = routed.route.auth === 'none'
    const budget = anonymous ? budgets.anonymous : budgets.authenticated
    const limit = anonymous ? options.identityBodyLimitBytes : routed.route.upstream.bodyLimitBytes ?? options.bodyLimitBytes
    const holding = budget.hold()
    if (response.closed) {
      holding.release()
      throw abortedError()
    }
    // Held until the answer is finished or its connection closes, whichever comes first.
    response.once('close', holding.release)
    const length = request.headers['content-length']
    // A body larger than the whole budget could never be held: that is a 413, not a 503 to retry.
    return readBodyInto(request, length === undefined ? undefined : Number(length), Math.min(limit, budget.capacityBytes), holding)
      .then((body) => asForwarded(routed, body))
  }
}

export type RequestBodyStage = ReturnType<typeof createRequestBodyStage>
