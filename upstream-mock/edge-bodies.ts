import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { CommonProblems } from '../common/problem.js'
import { problemResponses } from '../common/problem-schema.js'

/**
 * Member names that break naive key-case conversion. Kept as JSON text and sent as
 * is: `__proto__` must stay an own member of the body (an object literal would set
 * the prototype instead), and `constructor.prototype` must arrive as plain data.
 * `collision` holds two names that camelCase to the same key.
 */
export const EDGE_KEYS_JSON = `{
  "__proto__": { "is_polluted": true },
  "constructor": { "prototype": { "is_polluted": true } },
  "prototype": { "is_polluted": true },
  "hasOwnProperty": "shadowed",
  "toString": "shadowed",
  "address_line_1": "1 Main Street",
  "_leading_underscore": 1,
  "__double_leading": 2,
  "trailing_": 3,
  "HTTPServer": 4,
  "userID": 5,
  "already-dashed": 6,
  "CamelCase": 7,
  "with space": 8,
  "日本語_key": 9,
  "x": 10,
  "": 11,
  "value_not_a_key": "snake_case_value stays as is",
  "collision": { "user_name": "from snake", "userName": "from camel" },
  "nested_items": [
    {
      "__proto__": { "is_polluted": true },
      "constructor": { "prototype": { "is_polluted": true } },
      "address_line_1": "2 Side Street",
      "_leading_underscore": true,
      "HTTPServer": "nested",
      "日本語_key": "入れ子",
      "": "empty key in an array",
      "deeper_items": [[{ "__double_leading": "in an array of arrays", "userID": null }]]
    },
    { "trailing_": [], "with space": {}, "already-dashed": "", "CamelCase": 0 }
  ]
}`

export const MAX_DEEP_DEPTH = 100_000

/**
 * `depth` objects nested in one another, innermost `{"leaf_depth":N}`. Built as text:
 * neither this server nor a test should need a recursive serializer to produce it.
 */
export function deepJson (depth: number): string {
  return `${'{"child_node":'.repeat(depth - 1)}{"leaf_depth":${depth}}${'}'.repeat(depth - 1)}`
}

/** Sent as ready-made JSON text, so no serializer runs. */
const JsonText = Type.Unknown({ description: 'a JSON object' })
const JSON_CONTENT_TYPE = 'application/json; charset=utf-8'

/** GET /edge-keys and GET /deep: bodies for the gateway's inflection and depth-limit tests. */
export const edgeBodyRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get('/edge-keys', {
    schema: { summary: 'Member names that trip key-case conversion', tags: ['debugging'], response: { 200: JsonText, ...problemResponses() } }
  }, async (_request, reply) => await reply.type(JSON_CONTENT_TYPE).send(EDGE_KEYS_JSON))

  app.get('/deep', {
    schema: {
      summary: 'A JSON object nested depth levels deep',
      tags: ['debugging'],
      querystring: Type.Object({ depth: Type.Integer({ minimum: 1, maximum: MAX_DEEP_DEPTH }) }),
      response: { 200: JsonText, ...problemResponses(CommonProblems.validationFailed) }
    }
  }, async (request, reply) => await reply.type(JSON_CONTENT_TYPE).send(deepJson(request.query.depth)))
}
