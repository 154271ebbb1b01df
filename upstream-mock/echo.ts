import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { BODY_PROBLEMS, problemResponses } from '../common/problem-schema.js'
import { searchOf } from '../common/query-string.js'
import { readPrincipal } from './principal.js'

const StringOrList = Type.Union([Type.String(), Type.Array(Type.String())])

const EchoAnswer = Type.Object({
  method: Type.String(),
  path: Type.String(),
  /** The query string exactly as it arrived, with its `?` (empty when there is none). */
  search: Type.String(),
  query: Type.Record(Type.String(), StringOrList),
  headers: Type.Record(Type.String(), StringOrList),
  body: Type.Unknown(),
  principal: Type.Object({ id: Type.Union([Type.String(), Type.Null()]), permissions: Type.Array(Type.String()) })
})

/**
 * ALL /echo and /echo/*: the request as it arrived, for tests that prove what the
 * gateway forwarded (credentials stripped, identity headers added, bodies in the
 * upstream's key case). Bodies are JSON or absent; the query and body are free-form
 * by design, so only the answer has a schema.
 */
export const echoRoutes: FastifyPluginAsyncTypebox = async (app) => {
  for (const url of ['/echo', '/echo/*']) {
    app.all(url, {
      schema: { summary: 'Echo the request', tags: ['debugging'], response: { 200: EchoAnswer, ...problemResponses(BODY_PROBLEMS) } }
    }, async (request) => ({
      method: request.method,
      path: request.url.split('?')[0] ?? '',
      search: searchOf(request.url),
      query: request.query as Record<string, string | string[]>,
      headers: request.headers as Record<string, string | string[]>,
      body: request.body ?? null,
      principal: readPrincipal(request.headers)
    }))
  }
}
