import type { FastifyServerOptions } from 'fastify'
import { pino, type Logger, type LoggerOptions as PinoOptions } from 'pino'
import { bytesSentOn, declaredBodyBytes, responseBodyBytes } from './bytes-sent.js'
import { stdoutLogDestination } from './log-destination.js'
import { traceIdOf } from './traceparent.js'

/**
 * Paths pino replaces with "[redacted]" wherever they appear in a logged object.
 * Request logging below logs no headers or bodies at all; redaction is the second
 * line of defence for anything logged by hand.
 */
export const REDACTED_PATHS = [
  'req.headers.authorization',
  'req.headers["x-api-key"]',
  'req.headers.cookie',
  'headers.authorization',
  'headers["x-api-key"]',
  'authorization',
  '["x-api-key"]',
  'password',
  '*.password',
  'session.password',
  'refresh_token',
  '*.refresh_token',
  'access_token',
  '*.access_token',
  'secret',
  '*.secret',
  'key',
  '*.key',
  'token',
  '*.token'
]

export interface LoggerOptions {
  level: string
  /** Where log lines go; tests pass a stream to read them. Defaults to stdout, in batches. */
  stream?: NodeJS.WritableStream
  name: string
}

/** Fastify logger options: pino, redaction, and a request serializer without headers. */
export function loggerOptions (options: LoggerOptions): NonNullable<FastifyServerOptions['logger']> {
  return {
    level: options.level,
    name: options.name,
    redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
    stream: options.stream ?? stdoutLogDestination(),
    serializers: {
      // Only these three members, whatever was passed: never headers or a body.
      req: (req: { method?: unknown, url?: unknown, id?: unknown }) =>
        ({ method: req.method, url: typeof req.url === 'string' ? pathOf(req.url) : undefined, id: req.id })
    }
  } as NonNullable<FastifyServerOptions['logger']>
}

/** A logger outside any Fastify app (a cluster's primary), with the same options and destination as theirs. */
export function createLogger (options: LoggerOptions): Logger {
  const { stream, ...rest } = loggerOptions(options) as PinoOptions & { stream: NodeJS.WritableStream }
  return pino(rest, stream)
}

/** A request target without its query string. */
export function pathOf (url: string): string {
  const q = url.indexOf('?')
  return q === -1 ? url : url.slice(0, q)
}

/** What every line logged for a request calls its id: the access line's name for it (Fastify's `requestIdLogLabel`). */
export const REQUEST_ID_LOG_LABEL = 'request_id'

/** Who sent a request, as an access line names them: a key or user id, never a credential. */
export interface AccessPrincipal {
  readonly type: 'api_key' | 'user' | 'admin_token' | 'anonymous'
  /** The key's or user's id (`bootstrap` for identity's admin token); null when anonymous. */
  readonly id: string | null
}

export const ANONYMOUS_PRINCIPAL: AccessPrincipal = Object.freeze({ type: 'anonymous', id: null })

/**
 * What one access line says of a request: the same fields in every service, snake_case
 * as the APIs' JSON is, none of them a secret (docs/observability.md#access-log).
 */
export interface AccessLine {
  request_id: string
  /** The trace id of a valid W3C `traceparent` the request carried, else null. */
  trace_id: string | null
  method: string
  /** The path, without the query (pathOf): clients sometimes put credentials there. */
  url: string
  /** The route pattern that matched (`/users/:id`), or null when none did. */
  route: string | null
  /** The upstream it went to (the gateway's), else null. */
  upstream: string | null
  status: number
  principal: AccessPrincipal
  /** Request body bytes: its Content-Length, or, for a chunked body the gateway read, what it read. */
  bytes_in: number
  /** Response body bytes written to the connection (common/bytes-sent.ts). */
  bytes_out: number
  duration_ms: number
  remote_address: string | undefined
}

/**
 * The writer of access lines, one per request. The line holds only AccessLine's fields,
 * so it is written by a logger without the redaction pass: redaction walks every line
 * for its paths, which cost several times the line itself, on every request.
 */
export function createAccessLog (log: import('fastify').FastifyBaseLogger): (line: AccessLine) => void {
  const accessLog = log.child({}, { redact: [] })
  return (line) => { accessLog.info(line, 'request') }
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Who the request's access line names: set by a credential check (notePrincipal); null is anonymous. */
    accessPrincipal: AccessPrincipal | null
    /** What the request's connection had sent when it arrived, to measure its answer (bytes-sent.ts). */
    accessSentBefore: number
  }
}

/** Names who sent `request` on its access line, once a credential check (or a login) proved it. */
export function notePrincipal (request: import('fastify').FastifyRequest, principal: AccessPrincipal): void {
  request.accessPrincipal = principal
}

/** Milliseconds to two decimals, as access lines give durations. */
export function roundedMs (ms: number): number {
  return Math.round(ms * 100) / 100
}

/**
 * One access line per request (createAccessLog), written when the response is sent
 * (Fastify's own two-line request logging is turned off by `disableRequestLogging`).
 * Install it before any hook that may answer, so that every answer is measured.
 */
export function installRequestLogging (app: import('fastify').FastifyInstance): void {
  const write = createAccessLog(app.log)
  app.decorateRequest('accessPrincipal', null)
  app.decorateRequest('accessSentBefore', 0)
  app.addHook('onRequest', (request, _reply, done) => {
    request.accessSentBefore = bytesSentOn(request.raw.socket)
    done()
  })
  app.addHook('onResponse', (request, reply, done) => {
    write({
      request_id: request.id,
      trace_id: traceIdOf(request.headers.traceparent),
      method: request.method,
      url: pathOf(request.url),
      route: request.routeOptions.url ?? null,
      upstream: null,
      status: reply.statusCode,
      principal: request.accessPrincipal ?? ANONYMOUS_PRINCIPAL,
      bytes_in: declaredBodyBytes(request.headers),
      bytes_out: responseBodyBytes(reply.raw, request.accessSentBefore),
      duration_ms: roundedMs(reply.elapsedTime),
      remote_address: request.ip
    })
    done()
  })
}
