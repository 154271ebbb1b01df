import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyReply } from 'fastify'
import { Type } from 'typebox'
import { CommonProblems } from '../common/problem.js'
import { problemResponses } from '../common/problem-schema.js'
import { gzip } from './gzip.js'
import { pageMeta } from './resource-routes.js'
import type { User } from './schemas.js'
import type { ResourceStore } from './store.js'

export const MAX_SLOW_DELAY_MS = 60_000
/** How many users GET /gzip answers with. */
export const GZIP_PAGE_SIZE = 20

export const TEXT_BODY = 'upstream-mock: plain text.\nNot JSON: {"user_name": "must not be inflected"}\n'

const StatusBody = Type.Object({ status_code: Type.Integer() })
const tags = ['debugging']
/** RFC 9110 §15: these statuses carry no content. */
const WITHOUT_CONTENT = new Set([204, 205, 304])

/**
 * Answers a well-behaved back office never gives, for the gateway's edge-case tests:
 * slow answers (upstream timeout → 504), plain text, gzip the client did not ask for,
 * and any status code.
 */
export const edgeRoutes: FastifyPluginAsyncTypebox<{ users: ResourceStore<User> }> = async (app, { users }) => {
  // A slow answer still pending when the server closes is ended at once, so that
  // closing never waits for a timer of up to a minute.
  const pending = new Set<() => void>()
  app.addHook('preClose', (done) => {
    for (const endNow of pending) endNow()
    done()
  })

  app.get('/slow', {
    schema: {
      summary: 'Answer after delay_ms',
      tags,
      querystring: Type.Object({ delay_ms: Type.Integer({ minimum: 0, maximum: MAX_SLOW_DELAY_MS }) }),
      response: {
        200: Type.Object({ waited_ms: Type.Integer() }),
        // 503 when the server closes before the delay is over.
        ...problemResponses(CommonProblems.validationFailed, CommonProblems.serviceUnavailable)
      }
    }
  }, (request, reply) => {
    const waitedMs = request.query.delay_ms
    const settle = (answer: (r: FastifyReply) => void) => () => {
      clearTimeout(timer)
      pending.delete(endNow)
      if (!reply.sent && !reply.raw.destroyed) answer(reply as unknown as FastifyReply)
    }
    // `connection: close`: a keep-alive socket left open would hold up closing as much as the timer.
    const endNow = settle((r) => { r.header('connection', 'close').send(CommonProblems.serviceUnavailable()) })
    const timer = setTimeout(settle((r) => { r.send({ waited_ms: waitedMs }) }), waitedMs)
    pending.add(endNow)
    // The client (a gateway that timed out) went away: forget the timer.
    reply.raw.once('close', settle(() => {}))
  })

  app.get('/text', {
    schema: {
      summary: 'A text/plain answer',
      tags,
      response: { 200: Type.Unsafe<string>({ description: 'Plain text', content: { 'text/plain': { schema: Type.String() } } }), ...problemResponses() }
    }
  }, async (_request, reply) => await reply.type('text/plain; charset=utf-8').send(TEXT_BODY))

  app.get('/gzip', {
    schema: {
      summary: `The first ${GZIP_PAGE_SIZE} users, gzip-compressed whatever the request accepts`,
      tags,
      response: { 200: Type.Unknown({ description: 'gzip-compressed JSON' }), ...problemResponses() }
    }
  }, async (_request, reply) => {
    const body = JSON.stringify({ users: users.list(0, GZIP_PAGE_SIZE), meta: pageMeta(1, GZIP_PAGE_SIZE, users.count()) })
    return await reply.type('application/json; charset=utf-8').header('content-encoding', 'gzip').send(await gzip(body))
  })

  app.get('/status/:code', {
    schema: {
      summary: 'Answer with this status',
      tags,
      params: Type.Object({ code: Type.Integer({ minimum: 200, maximum: 599 }) }),
      // 4xx and 5xx bodies asked for are application/json `{status_code}`, left to the default
      // serializer; the problem entries apply to problem+json answers only (a bad :code).
      response: { '2xx': StatusBody, '3xx': StatusBody, ...problemResponses(CommonProblems.validationFailed) }
    }
  }, async (request, reply) => {
    const code = request.params.code
    if (WITHOUT_CONTENT.has(code)) return await (reply as unknown as FastifyReply).code(code).send()
    return await reply.code(code).send({ status_code: code })
  })

  app.get('/healthz', {
    schema: { summary: 'Liveness', tags: ['health'], response: { 200: Type.Object({ status: Type.Literal('ok') }), ...problemResponses() } }
  }, async () => ({ status: 'ok' as const }))
}
