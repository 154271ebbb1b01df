import type { FastifyReply, FastifyRequest } from 'fastify'
import { CommonProblems, problemAnswer, PROBLEM_CONTENT_TYPE, toProblem } from '../common/problem.js'
import { settleUnreadBody, type UnreadBodyLimits } from '../common/unread-body.js'
import type { KeyCase, SpellingBook } from './inflection/index.js'
import { rewriteGatewayBody } from './proxy/json-bodies.js'

/** Standard RFC 9457 members keep their names whatever the inflection; extension members follow it. */
const PROBLEM_MEMBERS = new Set(['type', 'title', 'status', 'detail', 'code'])

/** What a refusal's answer depends on besides its problem. */
export interface RefusalContext {
  /** The client's inflection, when it asked for a valid one: the problem's extension members follow it. */
  style: KeyCase | null
  /** Fields every answer to this principal carries (Deprecation, Sunset), and the RateLimit fields once admitted. */
  fields: readonly string[]
  /** The request passed the checks: its JSON answer could have been inflected (`Vary: x-api-inflection`). */
  checked: boolean
  /** The gateway is draining: `Connection: close`. */
  closing: boolean
}

/**
 * How the request path answers a request it does not forward, or whose upstream call
 * failed before its answer began: the problem+json of the error (common/problem.ts maps
 * every error; anything no table defines is a logged 500), its extension members in the
 * client's inflection, the request id, and a request body it leaves unread settled
 * (common/unread-body.ts: read out and the connection kept when small, otherwise
 * `Connection: close` and a lingering close, never a reset ahead of the answer).
 */
export function createRefusals (options: { spellings: SpellingBook, unreadBodies: UnreadBodyLimits }) {
  return function refuse (request: FastifyRequest, reply: FastifyReply, error: unknown, context: RefusalContext): void {
    // Written here, on the raw response, not through Fastify's send.
    reply.hijack()
    const response = reply.raw
    if (response.headersSent || response.destroyed) {
      response.destroy()
      return
    }
    const problem = toProblem(error, request)
    if (problem.code === CommonProblems.internal.code) request.log.error({ err: error }, 'request failed')
    const answer = problemAnswer(problem)
    const text = JSON.stringify(answer.body)
    const body = context.style === null ? Buffer.from(text) : rewriteGatewayBody(text, options.spellings.gatewayTable(context.style), PROBLEM_MEMBERS)
    const headers: string[] = ['content-type', PROBLEM_CONTENT_TYPE, 'content-length', String(body.length), 'x-request-id', request.id]
    for (const [name, value] of Object.entries(answer.headers)) headers.push(name, value)
    for (const field of context.fields) headers.push(field)
    if (context.checked || context.style !== null) headers.push('vary', 'x-api-inflection')
    settleUnreadBody(request.raw, options.unreadBodies, (outcome) => {
      if (response.destroyed) return
      if (outcome === 'close' || context.closing) headers.push('connection', 'close')
      response.writeHead(answer.status, headers)
      response.end(body)
    })
  }
}

export type Refusals = ReturnType<typeof createRefusals>
