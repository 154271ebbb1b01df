import Fastify, { LogController, type FastifyError, type FastifyInstance } from 'fastify'
import fastifyFormbody from '@fastify/formbody'
import { requestIdOf } from '../common/http-app.js'
import { lazyRequestLoggerFactory } from '../common/lazy-request-logger.js'
import { installRequestLogging, loggerOptions, REQUEST_ID_LOG_LABEL } from '../common/logger.js'
import { assetRoutes } from './assets.js'
import type { ConsoleConfig } from './config.js'
import type { Guard } from './forms.js'
import { createIdentityClient } from './identity-client.js'
import { createAdminClient } from './operator/admin-client.js'
import { auditRoutes } from './operator/audit-routes.js'
import { keysRoutes } from './operator/keys-routes.js'
import { overviewRoutes } from './operator/overview-routes.js'
import { rolesRoutes } from './operator/roles-routes.js'
import { usersRoutes } from './operator/users-routes.js'
import { notFoundPage, refusedPage } from './pages/refused.js'
import { healthRoutes } from './routes-health.js'
import { keyDetailRoutes } from './routes-key-detail.js'
import { keyRoutes } from './routes-keys.js'
import { sessionRoutes } from './routes-session.js'
import { sessionsRoutes } from './routes-sessions.js'
import { crossSiteRefusal, installSecurityHeaders } from './security.js'
import { registerSession } from './session.js'

export interface ConsoleDependencies {
  logStream?: NodeJS.WritableStream
  /** The console's clock (ms): when the access token is due for a refresh, what "in 3 days" means. */
  now?: () => number
}

/** Forms are a few hundred bytes: a larger body is refused before it is read. */
const BODY_LIMIT_BYTES = 8_192
const HTML = 'text/html; charset=utf-8'

/** Errors @fastify/csrf-protection throws for a missing or wrong token, or a session without its secret. */
const CSRF_ERRORS = new Set(['FST_CSRF_MISSING_SECRET', 'FST_CSRF_INVALID_TOKEN'])

/**
 * The back-office console: server-rendered pages under /console that act on identity
 * over HTTP with the signed-in user's own tokens, kept in an encrypted cookie.
 */
export async function buildConsole (config: ConsoleConfig, deps: ConsoleDependencies = {}): Promise<FastifyInstance> {
  const app = Fastify({
    logger: loggerOptions({ level: config.logLevel, name: 'console', ...(deps.logStream !== undefined ? { stream: deps.logStream } : {}) }),
    logController: new LogController({ disableRequestLogging: true, requestIdLogLabel: REQUEST_ID_LOG_LABEL }),
    childLoggerFactory: lazyRequestLoggerFactory,
    bodyLimit: BODY_LIMIT_BYTES,
    trustProxy: config.trustProxy,
    requestIdHeader: false,
    genReqId: requestIdOf
  })
  const now = deps.now ?? Date.now
  const identity = createIdentityClient(config.identityPublicUrl)
  const admin = createAdminClient(config.identityAdminUrl)
  installRequestLogging(app)
  installSecurityHeaders(app, { secureCookie: config.secureCookie })
  // Pages show the user's keys (and once, a secret): never kept by a cache, shared or not.
  app.addHook('onSend', (_request, reply, payload, done) => {
    if (String(reply.getHeader('content-type')).startsWith('text/html')) reply.header('cache-control', 'no-store')
    done(null, payload)
  })
  app.removeContentTypeParser('text/plain')
  await app.register(fastifyFormbody, { bodyLimit: BODY_LIMIT_BYTES })
  await registerSession(app, config)

  // Callback style, as @fastify/csrf-protection is: on a refusal it sends the answer and never calls `done`.
  const guard: Guard = (request, reply, done) => {
    const refusal = crossSiteRefusal(request)
    if (refusal !== null) {
      reply.code(403).type(HTML).send(refusedPage(refusal))
      return
    }
    app.csrfProtection(request, reply, done)
  }

  app.setErrorHandler((error: FastifyError, request, reply) => {
    if (error.code !== undefined && CSRF_ERRORS.has(error.code)) {
      return reply.code(403).type(HTML).send(refusedPage('the form was out of date or not the console\'s own (CSRF token missing or wrong); reload the page and try again'))
    }
    const status = error.statusCode !== undefined && error.statusCode >= 400 && error.statusCode < 500 ? error.statusCode : 500
    if (status === 500) request.log.error({ err: error }, 'console page failed')
    return reply.code(status).type(HTML).send(refusedPage(status === 500 ? 'the console failed' : 'the request could not be read'))
  })
  app.setNotFoundHandler((_request, reply) => reply.code(404).type(HTML).send(notFoundPage()))

  healthRoutes(app)
  assetRoutes(app)
  sessionRoutes(app, { identity, now, guard })
  keyRoutes(app, { identity, now, guard })
  keyDetailRoutes(app, { identity, now, guard })
  sessionsRoutes(app, { identity, now, guard })
  // The operator pages: each checks its operator permission, then calls identity's admin API with the operator's own token.
  auditRoutes(app, { identity, admin, now })
  usersRoutes(app, { identity, admin, now, guard })
  rolesRoutes(app, { identity, admin, now, guard })
  overviewRoutes(app, { identity, admin, now, guard })
  keysRoutes(app, { identity, admin, now, guard })
  return app
}
