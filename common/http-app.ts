import Fastify, { LogController, type FastifyInstance, type FastifyRequest, type FastifyServerOptions } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { randomUUID } from 'node:crypto'
import { createServer, type IncomingMessage, type RequestListener, type ServerResponse } from 'node:http'
import { installAcceptCheck } from './accept.js'
import { createAjv } from './ajv.js'
import { createBodyBudget, type BodyBudget } from './body-budget.js'
import { DEFAULT_BUFFERED_BODIES_MAX_BYTES, DEFAULT_LISTENER_TIMEOUTS, httpServerTimeouts, type ListenerTimeouts } from './listener-limits.js'
import { answerError, CommonProblems, createClientErrorHandler, installProblemHandlers, problemBody, PROBLEM_CONTENT_TYPE, sendProblem } from './problem.js'
import { ProblemSchema } from './problem-schema.js'
import { queryStringProblem, searchOf } from './query-string.js'
import { lazyRequestLoggerFactory } from './lazy-request-logger.js'
import { installRequestLogging, loggerOptions, REQUEST_ID_LOG_LABEL } from './logger.js'
import { bufferedBodyReader } from './request-body.js'
import { installRequestEcho } from './request-echo.js'
import { DEFAULT_UNREAD_BODY_LIMITS, isLingering, type UnreadBodyLimits } from './unread-body.js'

export interface HttpAppOptions {
  name: string
  logLevel: string
  logStream?: NodeJS.WritableStream
  /** Largest body of any route of the app (a route may set a smaller `bodyLimit`). */
  bodyLimitBytes: number
  trustProxy?: boolean | string
  /** Header, request and keep-alive timeouts; default DEFAULT_LISTENER_TIMEOUTS (10 s, 30 s, 5 s). */
  timeouts?: ListenerTimeouts
  /** What becomes of request bodies answered unread (common/unread-body.ts); default DEFAULT_UNREAD_BODY_LIMITS. */
  unreadBodies?: UnreadBodyLimits
  /** What JSON bodies in flight may hold, shared with other apps when given; default a budget of its own, 16 MiB. */
  bodyBudget?: BodyBudget
  /**
   * Install the service hooks (installServiceHooks) at the root, for every route
   * (default). The gateway turns this off: its request path does that work itself, and
   * its other routes get the hooks in their own contexts.
   */
  serviceHooks?: boolean
}

const REQUEST_ID_PATTERN = /^[\w.:-]{1,128}$/

/** The request id: the client's `x-request-id` when well-formed, else a new UUID. */
export function requestIdOf (request: IncomingMessage): string {
  const presented = request.headers['x-request-id']
  return typeof presented === 'string' && REQUEST_ID_PATTERN.test(presented) ? presented : randomUUID()
}

/** Answers a request line that is not HTTP/1.x, and closes the connection. */
function refuseHttpVersion (response: ServerResponse): void {
  const body = JSON.stringify(problemBody(CommonProblems.unsupportedHttpVersion()))
  response.writeHead(400, { 'content-type': PROBLEM_CONTENT_TYPE, 'content-length': Buffer.byteLength(body), connection: 'close' })
  response.end(body)
}

/**
 * node:http's server as Fastify would make it, with two checks before Fastify: Node's
 * parser takes an HTTP/0.9-style request line (`GET /path`, no version) as a request,
 * which no Portier listener serves: it gets a 400 problem and its connection is closed;
 * and a request that arrives on a connection closing after a refusal is dropped.
 */
function serverWithVersionCheck (timeouts: ReturnType<typeof httpServerTimeouts>): NonNullable<FastifyServerOptions['serverFactory']> {
  return (handler: RequestListener) => {
    const server = createServer(timeouts, (request, response) => {
      // A request read from a connection closing after a refusal is not served (common/unread-body.ts).
      if (isLingering(request.socket)) request.resume()
      else if (request.httpVersionMajor === 1) handler(request, response)
      else refuseHttpVersion(response)
    })
    server.keepAliveTimeout = timeouts.keepAliveTimeout
    server.requestTimeout = timeouts.requestTimeout
    return server
  }
}

/**
 * A Fastify instance as every Portier service wants it: TypeBox types, JSON schemas
 * validated strictly (bodies are never coerced: `"password": 123` is a 400, while
 * query strings and params are), problem+json errors (requests Node's parser refuses
 * and request lines that are not HTTP/1.x included), header, request and keep-alive
 * timeouts on its listener, JSON bodies read within the route's limit and a budget of
 * bytes shared by every request in flight (common/request-body.ts), and the service
 * hooks (installServiceHooks) unless the app's owner installs them where it wants them.
 */
export function createHttpApp (options: HttpAppOptions) {
  const timeouts = httpServerTimeouts(options.timeouts ?? DEFAULT_LISTENER_TIMEOUTS)
  const unreadBodies = options.unreadBodies ?? DEFAULT_UNREAD_BODY_LIMITS
  const app = Fastify({
    serverFactory: serverWithVersionCheck(timeouts),
    logger: loggerOptions({ level: options.logLevel, name: options.name, ...(options.logStream !== undefined ? { stream: options.logStream } : {}) }),
    logController: new LogController({ disableRequestLogging: true, requestIdLogLabel: REQUEST_ID_LOG_LABEL }),
    childLoggerFactory: lazyRequestLoggerFactory,
    bodyLimit: options.bodyLimitBytes,
    trustProxy: options.trustProxy ?? false,
    // Fastify's own 503 while closing is plain JSON; the service hooks answer it as a problem.
    return503OnClosing: false,
    requestIdHeader: false,
    // Errors raised before routing (a malformed URL) get the same problem+json answer.
    frameworkErrors: (error, request, reply) => { answerError(error, request, reply) },
    // And requests Node's parser refuses before Fastify sees them.
    clientErrorHandler: createClientErrorHandler(unreadBodies),
    genReqId: requestIdOf
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
      // Fastify's default parser answers through its callback.
      void parseJson(request, body.toString('utf8'), (error, value) => { if (error !== null) reject(error); else resolve(value) })
    })
  })

  const bodyAjv = createAjv(false)
  const partsAjv = createAjv('array')
  app.setValidatorCompiler(({ schema, httpPart }) => (httpPart === 'body' ? bodyAjv : partsAjv).compile(schema))
  // Routes declare their problem answers by reference to it (common/problem-schema.ts).
  app.addSchema(ProblemSchema)
  installProblemHandlers(app as unknown as FastifyInstance)
  if (options.serviceHooks !== false) installServiceHooks(app as unknown as FastifyInstance, { unreadBodies })
  return app
}

/** Set on an instance (and its children) once the service hooks are installed, so they never run twice. */
const SERVICE_HOOKS = 'portierServiceHooks'

/**
 * What every route of a Portier service does around its handler: while draining, a new
 * request gets a 503 problem and every answer says `Connection: close` (an idle
 * keep-alive socket would otherwise hold the shutdown open until the client's keep-alive
 * timeout); a malformed query is a 400 on every route, never a 500 from a stricter
 * parser further on; an Accept that excludes JSON is a 406; every answer echoes the
 * request id and settles a body it leaves unread (common/unread-body.ts); and one access
 * line is logged per request.
 */
export function installServiceHooks (app: FastifyInstance, options: { unreadBodies: UnreadBodyLimits }): void {
  if (app.hasDecorator(SERVICE_HOOKS)) return
  app.decorate(SERVICE_HOOKS, true)
  // First: the hooks below may answer, and every answer is measured and logged.
  installRequestLogging(app)
  let closing = false
  app.addHook('preClose', (done) => { closing = true; done() })
  installRequestEcho(app, options.unreadBodies)
  app.addHook('onSend', (_request, reply, _payload, done) => {
    if (closing) reply.header('connection', 'close')
    done()
  })
  app.addHook('onRequest', (_request, reply, done) => {
    if (closing) sendProblem(reply, CommonProblems.serviceUnavailable())
    else done()
  })
  app.addHook('onRequest', (request, reply, done) => {
    const problem = queryStringProblem(searchOf(request.url))
    if (problem === null) done()
    else sendProblem(reply, CommonProblems.malformedQuery([problem]))
  })
  installAcceptCheck(app)
}

export type HttpApp = ReturnType<typeof createHttpApp>
