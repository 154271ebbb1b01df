import Fastify, { LogController, type FastifyInstance } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { randomUUID } from 'node:crypto'
import { installAcceptCheck } from './accept.js'
import { createAjv } from './ajv.js'
import { answerClientError, CommonProblems, installProblemHandlers, sendProblem, toProblem } from './problem.js'
import { ProblemSchema } from './problem-schema.js'
import { queryStringProblem, searchOf } from './query-string.js'
import { installRequestLogging, loggerOptions } from './logger.js'

export interface HttpAppOptions {
  name: string
  logLevel: string
  logStream?: NodeJS.WritableStream
  bodyLimitBytes: number
  trustProxy?: boolean | string
}

const REQUEST_ID_PATTERN = /^[\w.:-]{1,128}$/

/**
 * A Fastify instance as every Portier service wants it: TypeBox types, JSON schemas
 * validated strictly (bodies are never coerced: `"password": 123` is a 400, while
 * query strings and params are), problem+json errors, one log line per request,
 * `x-request-id` propagated when well-formed.
 */
export function createHttpApp (options: HttpAppOptions) {
  const app = Fastify({
    logger: loggerOptions({ level: options.logLevel, name: options.name, ...(options.logStream !== undefined ? { stream: options.logStream } : {}) }),
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: options.bodyLimitBytes,
    trustProxy: options.trustProxy ?? false,
    // Fastify's own 503 while closing is plain JSON; the hook below answers it as a problem.
    return503OnClosing: false,
    requestIdHeader: false,
    // Errors raised before routing (a malformed URL) get the same problem+json answer.
    frameworkErrors: (error, request, reply) => { sendProblem(reply, toProblem(error, request)) },
    // And requests Node's parser refuses before Fastify sees them.
    clientErrorHandler: answerClientError,
    genReqId: (req) => {
      const presented = req.headers['x-request-id']
      return typeof presented === 'string' && REQUEST_ID_PATTERN.test(presented) ? presented : randomUUID()
    }
  }).withTypeProvider<TypeBoxTypeProvider>()

  // Fastify parses text/plain by default; every Portier body is JSON, so anything else is a 415.
  app.removeContentTypeParser('text/plain')

  const bodyAjv = createAjv(false)
  const partsAjv = createAjv('array')
  app.setValidatorCompiler(({ schema, httpPart }) => (httpPart === 'body' ? bodyAjv : partsAjv).compile(schema))
  // Routes declare their problem answers by reference to it (common/problem-schema.ts).
  app.addSchema(ProblemSchema)
  // While draining, answers say `Connection: close`: an idle keep-alive socket would
  // otherwise hold the shutdown open until the client's keep-alive timeout.
  let closing = false
  app.addHook('preClose', (done) => { closing = true; done() })
  app.addHook('onSend', (request, reply, _payload, done) => {
    reply.header('x-request-id', request.id)
    if (closing) reply.header('connection', 'close')
    done()
  })
  // A request that arrives while draining (on a connection already open) does no work: the client retries elsewhere.
  app.addHook('onRequest', (_request, reply, done) => {
    if (closing) sendProblem(reply, CommonProblems.serviceUnavailable())
    else done()
  })
  // A malformed query is the client's error on every route, never a 500 from a stricter parser further on.
  app.addHook('onRequest', (request, reply, done) => {
    const problem = queryStringProblem(searchOf(request.url))
    if (problem === null) done()
    else sendProblem(reply, CommonProblems.malformedQuery([problem]))
  })
  installAcceptCheck(app as unknown as FastifyInstance)
  installProblemHandlers(app as unknown as FastifyInstance)
  installRequestLogging(app as unknown as FastifyInstance)
  return app
}

export type HttpApp = ReturnType<typeof createHttpApp>
