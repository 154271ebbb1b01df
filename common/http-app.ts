import Fastify, { LogController, type FastifyInstance, type FastifyRequest } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { randomUUID } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import { installAcceptCheck } from './accept.js'
import { createAjv } from './ajv.js'
import { createBodyBudget, type BodyBudget } from './body-budget.js'
import { DEFAULT_BUFFERED_BODIES_MAX_BYTES, DEFAULT_LISTENER_TIMEOUTS, httpServerTimeouts, type ListenerTimeouts } from './listener-limits.js'
import { answerClientError, answerError, CommonProblems, installProblemHandlers, sendProblem } from './problem.js'
import { ProblemSchema } from './problem-schema.js'
import { queryStringProblem, searchOf } from './query-string.js'
import { lazyRequestLoggerFactory } from './lazy-request-logger.js'
import { installRequestLogging, loggerOptions } from './logger.js'
import { bufferedBodyReader } from './request-body.js'
import { installRequestEcho } from './request-echo.js'

export interface HttpAppOptions {
  name: string
  logLevel: string
  logStream?: NodeJS.WritableStream
  /** Largest body of any route of the app (a route may set a smaller `bodyLimit`). */
  bodyLimitBytes: number
  trustProxy?: boolean | string
  /** Header, request and keep-alive timeouts; default DEFAULT_LISTENER_TIMEOUTS (10 s, 30 s, 5 s). */
  timeouts?: ListenerTimeouts
  /** What JSON bodies in flight may hold, shared with other apps when given; default a budget of its own, 16 MiB. */
  bodyBudget?: BodyBudget
}

const REQUEST_ID_PATTERN = /^[\w.:-]{1,128}$/

/**
 * A Fastify instance as every Portier service wants it: TypeBox types, JSON schemas
 * validated strictly (bodies are never coerced: `"password": 123` is a 400, while
 * query strings and params are), problem+json errors, one log line per request,
 * `x-request-id` propagated when well-formed, header, request and keep-alive timeouts
 * on its listener, and JSON bodies read within the route's limit and a budget of
 * bytes shared by every request in flight (common/request-body.ts).
 */
export function createHttpApp (options: HttpAppOptions) {
  const timeouts = httpServerTimeouts(options.timeouts ?? DEFAULT_LISTENER_TIMEOUTS)
  const app = Fastify({
    // Fastify sets these two on the server after creating it; the others only node:http reads.
    requestTimeout: timeouts.requestTimeout,
    keepAliveTimeout: timeouts.keepAliveTimeout,
    http: timeouts,
    logger: loggerOptions({ level: options.logLevel, name: options.name, ...(options.logStream !== undefined ? { stream: options.logStream } : {}) }),
    logController: new LogController({ disableRequestLogging: true }),
    childLoggerFactory: lazyRequestLoggerFactory,
    bodyLimit: options.bodyLimitBytes,
    trustProxy: options.trustProxy ?? false,
    // Fastify's own 503 while closing is plain JSON; the hook below answers it as a problem.
    return503OnClosing: false,
    requestIdHeader: false,
    // Errors raised before routing (a malformed URL) get the same problem+json answer.
    frameworkErrors: (error, request, reply) => { answerError(error, request, reply) },
    // And requests Node's parser refuses before Fastify sees them.
    clientErrorHandler: answerClientError,
    genReqId: (req) => {
      const presented = req.headers['x-request-id']
      return typeof presented === 'string' && REQUEST_ID_PATTERN.test(presented) ? presented : randomUUID()
    }
  }).withTypeProvider<TypeBoxTypeProvider>()

  // Fastify parses text/plain by default; every Portier body is JSON, so anything else is a 415.
  app.removeContentTypeParser('text/plain')
  // Fastify's own JSON parser, fed by a reader that holds bodies within the budget.
  const readBody = bufferedBodyReader(app as unknown as FastifyInstance)
  const budget = options.bodyBudget ?? createBodyBudget(DEFAULT_BUFFERED_BODIES_MAX_BYTES)
  const parseJson = app.getDefaultJsonParser('error', 'error')
  app.removeContentTypeParser('application/json')
  app.addContentTypeParser('application/json', async (request: FastifyRequest, payload: IncomingMessage) => {
    const body = await readBody(request, payload, request.routeOptions.bodyLimit, budget)
    return await new Promise((resolve, reject) => {
      parseJson(request, body.toString('utf8'), (error, value) => { if (error !== null) reject(error); else resolve(value) })
    })
  })

  const bodyAjv = createAjv(false)
  const partsAjv = createAjv('array')
  app.setValidatorCompiler(({ schema, httpPart }) => (httpPart === 'body' ? bodyAjv : partsAjv).compile(schema))
  // Routes declare their problem answers by reference to it (common/problem-schema.ts).
  app.addSchema(ProblemSchema)
  // While draining, answers say `Connection: close`: an idle keep-alive socket would
  // otherwise hold the shutdown open until the client's keep-alive timeout.
  let closing = false
  app.addHook('preClose', (done) => { closing = true; done() })
  installRequestEcho(app as unknown as FastifyInstance)
  app.addHook('onSend', (_request, reply, _payload, done) => {
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
