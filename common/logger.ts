import type { FastifyServerOptions } from 'fastify'
import { pino, type Logger, type LoggerOptions as PinoOptions } from 'pino'
import { stdoutLogDestination } from './log-destination.js'

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

/** What one access line says of a request: fixed fields, none of them a secret. */
export interface AccessLine {
  reqId: string
  method: string
  /** The path, without the query (pathOf): clients sometimes put credentials there. */
  url: string
  /** The route pattern that matched, or null. */
  route: string | null
  status: number
  responseTimeMs: number
  remoteAddress: string | undefined
  /** Where the request went, for a gateway. */
  upstream?: string
  /** Who sent it, once authenticated: the kind and the key or user id. */
  principal?: { type: string, id: string }
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

/**
 * One access line per request (createAccessLog), written when the response is sent
 * (Fastify's own two-line request logging is turned off by `disableRequestLogging`).
 */
export function installRequestLogging (app: import('fastify').FastifyInstance): void {
  const write = createAccessLog(app.log)
  app.addHook('onResponse', (request, reply, done) => {
    write({
      reqId: request.id,
      method: request.method,
      url: pathOf(request.url),
      route: request.routeOptions.url ?? null,
      status: reply.statusCode,
      responseTimeMs: Math.round(reply.elapsedTime * 100) / 100,
      remoteAddress: request.ip
    })
    done()
  })
}
