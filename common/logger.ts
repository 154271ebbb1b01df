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
export function loggerOptions (options: LoggerOptions): FastifyServerOptions['logger'] {
  return {
    level: options.level,
    name: options.name,
    redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
    stream: options.stream ?? stdoutLogDestination(),
    serializers: {
      // Only these three members, whatever was passed: never headers or a body.
      req: (req: { method?: unknown, url?: unknown, id?: unknown }) =>
        ({ method: req.method, url: typeof req.url === 'string' ? stripQuery(req.url) : undefined, id: req.id })
    }
  } as FastifyServerOptions['logger']
}

/** A logger outside any Fastify app (a cluster's primary), with the same options and destination as theirs. */
export function createLogger (options: LoggerOptions): Logger {
  const { stream, ...rest } = loggerOptions(options) as PinoOptions & { stream: NodeJS.WritableStream }
  return pino(rest, stream)
}

function stripQuery (url: string): string {
  const q = url.indexOf('?')
  return q === -1 ? url : url.slice(0, q)
}

/**
 * One log line per request, written when the response is sent (Fastify's own
 * two-line request logging is turned off by `disableRequestLogging`). The query
 * string is left out because clients sometimes put credentials in it. The line holds
 * only these fields, none of them a secret, so it is written by a logger without the
 * redaction pass: redaction walks every line for its paths, which cost several times
 * the line itself, on every request.
 */
export function installRequestLogging (app: import('fastify').FastifyInstance): void {
  const accessLog = app.log.child({}, { redact: [] })
  app.addHook('onResponse', (request, reply, done) => {
    accessLog.info({
      reqId: request.id,
      method: request.method,
      url: stripQuery(request.url),
      route: request.routeOptions.url,
      status: reply.statusCode,
      responseTimeMs: Math.round(reply.elapsedTime * 100) / 100,
      remoteAddress: request.ip
    }, 'request')
    done()
  })
}
