import createError from '@fastify/error'
import { STATUS_CODES } from 'node:http'
import { Socket } from 'node:net'
import type { Duplex } from 'node:stream'
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { answeredBeforeItsBody, linger, type UnreadBodyLimits } from './unread-body.js'

/**
 * RFC 9457 problem details. Every error a Portier service answers with is rendered
 * here, in one place: our own problems, Fastify's errors and the unknown.
 */
export const PROBLEM_CONTENT_TYPE = 'application/problem+json; charset=utf-8'
const PROBLEM_TYPE_PREFIX = 'urn:portier:problem:'
const MAX_REPORTED_VIOLATIONS = 20
/** RFC 9110 §15.5.2: every 401 names a scheme; RFC 6750 §3 gives Bearer's syntax. */
export const BEARER_CHALLENGE = 'Bearer realm="portier"'
export function bearerChallenge (error: 'invalid_token' | 'invalid_request' | 'insufficient_scope'): string {
  return `${BEARER_CHALLENGE}, error="${error}"`
}

export interface ProblemBody {
  type: string
  title: string
  status: number
  detail: string
  code: string
  [extension: string]: unknown
}

/** What a thrown problem may carry beyond its code: extension members and headers. */
export interface ProblemExtras {
  extensions?: Record<string, unknown>
  headers?: Record<string, string>
}

export interface PortierProblem extends FastifyError {
  title: string
  extensions?: Record<string, unknown>
  headers?: Record<string, string>
}

export type ProblemFactory = ((detailArgs?: unknown[], extras?: ProblemExtras) => PortierProblem) & {
  code: string
  status: number
  title: string
}

/**
 * Declares one problem type: a stable code (never reused), a constant title, a status,
 * and a detail template (`%s` placeholders filled per occurrence).
 */
export function defineProblem (code: string, status: number, title: string, detailTemplate: string = title,
  defaultHeaders?: Record<string, string>): ProblemFactory {
  const ErrorClass = createError(code, detailTemplate, status)
  const factory = (detailArgs: unknown[] = [], extras: ProblemExtras = {}): PortierProblem => {
    const error = new ErrorClass(...detailArgs) as PortierProblem
    // @fastify/error upper-cases codes; the public contract uses lower-case snake_case ones.
    error.code = code
    error.title = title
    if (extras.extensions !== undefined) error.extensions = extras.extensions
    const headers = { ...defaultHeaders, ...extras.headers }
    if (Object.keys(headers).length > 0) error.headers = headers
    return error
  }
  return Object.assign(factory, { code, status, title })
}

/** Problems every service shares: framework-level failures. */
export const CommonProblems = {
  validationFailed: defineProblem('validation_failed', 400, 'Request validation failed', '%s'),
  malformedJson: defineProblem('malformed_json', 400, 'Malformed JSON body',
    'The request body is not valid JSON, or it has a forbidden member name (__proto__, constructor.prototype).'),
  malformedUrl: defineProblem('malformed_url', 400, 'Malformed URL', 'The request path is not a valid URL.'),
  malformedQuery: defineProblem('malformed_query', 400, 'Malformed query string', 'The query string is refused: %s.'),
  emptyBody: defineProblem('empty_body', 400, 'Empty request body', 'A JSON body is required.'),
  notFound: defineProblem('not_found', 404, 'Not found', 'No route matches %s %s.'),
  notAcceptable: defineProblem('not_acceptable', 406, 'Not acceptable', 'This API answers application/json only.'),
  unsupportedHttpVersion: defineProblem('unsupported_http_version', 400, 'Unsupported HTTP version',
    'The request line is not HTTP/1.0 or HTTP/1.1 (an HTTP/0.9 request line has no version); the connection is closed.'),
  requestTimeout: defineProblem('request_timeout', 408, 'Request timeout',
    'The request was not received in full within the time allowed; the connection is closed.'),
  bodyTooLarge: defineProblem('body_too_large', 413, 'Request body too large', 'The request body exceeds %s bytes.'),
  unsupportedMediaType: defineProblem('unsupported_media_type', 415, 'Unsupported media type', 'Send the body as application/json.'),
  internal: defineProblem('internal_error', 500, 'Internal server error', 'An unexpected error occurred; it has been logged.'),
  serviceUnavailable: defineProblem('service_unavailable', 503, 'Service unavailable', 'The service is shutting down or not ready.'),
  bodiesAtCapacity: defineProblem('bodies_at_capacity', 503, 'Request bodies at capacity',
    'The server holds as many request bodies as it can right now; retry shortly.', { 'retry-after': '1' })
} as const

/** What fills the `%s` of some details above, when it is fixed words rather than a value of the request. */
export const CommonDetails = {
  /** validationFailed: a body shorter or longer than its Content-Length said. */
  contentLengthMismatch: 'Content-Length does not match the body.'
} as const

/** A 4xx of Fastify's or a plugin's that no table maps (`http_<status>`): titled by its status, this otherwise. */
const UNMAPPED_CLIENT_ERROR = { title: 'Client error', detail: 'The request could not be processed.' } as const

/**
 * Problems of presented credentials that identity and the gateway both answer with:
 * one code means one thing whichever service says it.
 */
export const AuthProblems = {
  credentialsMissing: defineProblem('credentials_missing', 401, 'Credentials missing', '%s'),
  invalidToken: defineProblem('invalid_token', 401, 'Invalid access token', '%s',
    { 'www-authenticate': bearerChallenge('invalid_token') })
} as const

/** The details of AuthProblems that both services give, worded once. */
export const AuthDetails = {
  malformedBearer: 'The Authorization header is not a well-formed Bearer credential.',
  tokenExpired: 'The access token has expired.',
  tokenInvalid: 'The access token is invalid.',
  tokenClaimsMissing: 'The access token lacks its session or permission claims.'
} as const

/** Fastify's own error codes, translated at this one boundary. */
const FASTIFY_CODES: Record<string, (error: FastifyError, request: FastifyRequest) => PortierProblem> = {
  FST_ERR_CTP_INVALID_JSON_BODY: () => CommonProblems.malformedJson(),
  FST_ERR_BAD_URL: () => CommonProblems.malformedUrl(),
  FST_ERR_CTP_EMPTY_JSON_BODY: () => CommonProblems.emptyBody(),
  FST_ERR_CTP_BODY_TOO_LARGE: (_e, request) => CommonProblems.bodyTooLarge([request.routeOptions.bodyLimit]),
  FST_ERR_CTP_INVALID_MEDIA_TYPE: () => CommonProblems.unsupportedMediaType(),
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: () => CommonProblems.validationFailed([CommonDetails.contentLengthMismatch])
}

/** True for the problems `defineProblem` creates (what services throw for expected outcomes). */
export function isPortierProblem (error: unknown): error is PortierProblem {
  return error instanceof Error && typeof (error as PortierProblem).title === 'string' &&
    typeof (error as PortierProblem).statusCode === 'number'
}

function fromValidation (error: FastifyError): PortierProblem {
  // Capped: a body with thousands of unknown members must not produce a huge answer.
  const violations = (error.validation ?? []).slice(0, MAX_REPORTED_VIOLATIONS).map((v) => {
    const where = `${error.validationContext ?? 'body'}${v.instancePath}`
    const params = v.params as Record<string, unknown>
    const extra = typeof params.additionalProperty === 'string'
      ? ` (${String(params.additionalProperty)})`
      : typeof params.missingProperty === 'string' ? ` (${String(params.missingProperty)})` : ''
    return { path: where, message: `${v.message ?? 'is invalid'}${extra}` }
  })
  const detail = violations.map((v) => `${v.path} ${v.message}`).join('; ')
  return CommonProblems.validationFailed([detail], { extensions: { errors: violations } })
}

/** Translates anything thrown into a problem; unknown errors become a plain 500. */
export function toProblem (error: unknown, request: FastifyRequest): PortierProblem {
  if (isPortierProblem(error)) return error
  const fastifyError = error as FastifyError
  if (fastifyError?.validation !== undefined) return fromValidation(fastifyError)
  const translate = typeof fastifyError?.code === 'string' ? FASTIFY_CODES[fastifyError.code] : undefined
  if (translate !== undefined) return translate(fastifyError, request)
  const status = fastifyError?.statusCode
  if (typeof status === 'number' && status >= 400 && status < 500) return genericClientProblem(status)
  return CommonProblems.internal()
}

const genericClientProblems = new Map<number, ProblemFactory>()

/** A 4xx raised by Fastify or a plugin that we did not map: keep its status, hide its internals. */
function genericClientProblem (status: number): PortierProblem {
  let factory = genericClientProblems.get(status)
  if (factory === undefined) {
    factory = defineProblem(`http_${status}`, status, STATUS_CODES[status] ?? UNMAPPED_CLIENT_ERROR.title, UNMAPPED_CLIENT_ERROR.detail)
    genericClientProblems.set(status, factory)
  }
  return factory()
}

/**
 * Fastify's `clientErrorHandler`: Node's HTTP parser refuses some requests before any
 * route sees them (CR, LF or NUL in a header, headers over the size limit, conflicting
 * Content-Length and Transfer-Encoding, a malformed request line). Fastify's default
 * answers those with plain JSON; they get the same `http_<status>` problem as any
 * other framework client error. A request whose headers or body did not arrive within
 * the listener's timeouts (common/listener-limits.ts) comes here too, as
 * `408 request_timeout`. The connection is then closed the lingering way
 * (common/unread-body.ts), so that a client still sending reads the answer, not a reset.
 */
export function createClientErrorHandler (limits: UnreadBodyLimits) {
  return function answerClientError (error: Error & { code?: string }, socket: Duplex): void {
    // A reset connection has nobody left to answer.
    if (error.code === 'ECONNRESET' || socket.destroyed) return
    const timedOut = error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
    const status = timedOut
      ? 408
      : error.code === 'HPE_HEADER_OVERFLOW' ? 431 : error.code === 'HPE_CHUNK_EXTENSIONS_OVERFLOW' ? 413 : 400
    const problem = timedOut ? CommonProblems.requestTimeout() : genericClientProblem(status)
    const body = JSON.stringify(problemBody(problem))
    // As Node does: an answer already begun on this socket must not be followed by another
    // head; nor may a request that was answered before its body was cut get a second one.
    const inFlight = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } | null })._httpMessage
    if (socket.writable && inFlight?.headersSent !== true && !answeredBeforeItsBody(socket)) {
      socket.write(`HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\ncontent-type: ${PROBLEM_CONTENT_TYPE}\r\n` +
        `content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`)
    }
    if (socket instanceof Socket) linger(socket, limits)
    else socket.destroy(error)
  }
}

export function problemBody (problem: PortierProblem): ProblemBody {
  const body: ProblemBody = {
    type: `${PROBLEM_TYPE_PREFIX}${problem.code}`,
    title: problem.title,
    status: problem.statusCode ?? 500,
    detail: problem.message,
    code: problem.code
  }
  // Standard members read first; an extension member can never overwrite one (RFC 9457 §3.2).
  for (const [name, value] of Object.entries(problem.extensions ?? {})) {
    if (!Object.hasOwn(body, name)) body[name] = value
  }
  return body
}

/**
 * A problem as an answer: its status, its headers (those it carries, and for a 401 the
 * RFC 6750 challenge when neither it nor the answer (`challenged`) names one) and its body. What every Portier answer with
 * a problem is made of, whether Fastify sends it or a raw response does.
 */
export function problemAnswer (problem: PortierProblem, options: { challenged?: boolean } = {}): { status: number, headers: Record<string, string>, body: ProblemBody } {
  const body = problemBody(problem)
  const headers = { ...problem.headers }
  if (body.status === 401 && headers['www-authenticate'] === undefined && options.challenged !== true) headers['www-authenticate'] = BEARER_CHALLENGE
  return { status: body.status, headers, body }
}

export function sendProblem (reply: FastifyReply, problem: PortierProblem): FastifyReply {
  const answer = problemAnswer(problem, { challenged: reply.hasHeader('www-authenticate') })
  reply.headers(answer.headers)
  return reply.code(answer.status).type(PROBLEM_CONTENT_TYPE).send(answer.body)
}

/**
 * The one error handler of every Portier context (each service's apps, the gateway's
 * traffic and metrics contexts inside a host app, Fastify's framework errors): anything
 * thrown is answered as its problem. Only what no problem table defines, answered as
 * `internal_error`, is logged here, with its stack: a problem we defined is an outcome
 * we meant (an upstream that did not answer, bodies at capacity, a refused
 * credential), which the request's own log line records.
 */
export function answerError (error: unknown, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const problem = toProblem(error, request)
  if (problem.code === CommonProblems.internal.code) request.log.error({ err: error }, 'request failed')
  return sendProblem(reply, problem)
}

/**
 * Installs the problem+json error handler on a context. A context that is not a whole
 * app (a plugin's, inside a host app that may have its own not-found handler) takes
 * this one alone.
 */
export function installProblemErrorHandler (app: FastifyInstance): void {
  app.setErrorHandler(answerError)
}

/** Installs the problem+json error and not-found handlers on a Portier app. */
export function installProblemHandlers (app: FastifyInstance): void {
  installProblemErrorHandler(app)
  app.setNotFoundHandler((request, reply) => {
    return sendProblem(reply, CommonProblems.notFound([request.method, request.url.split('?')[0]]))
  })
}
