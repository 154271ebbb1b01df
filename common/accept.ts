import type { FastifyInstance } from 'fastify'
import { CommonProblems } from './problem.js'

/**
 * JSON is all we serve: a missing Accept, `*\/*` or `application/json` is served; an Accept that
 * excludes JSON gets 406. Ranges with q=0 are exclusions.
 */
export function acceptsJson (accept: string | undefined): boolean {
  if (accept === undefined || accept.trim() === '') return true
  for (const range of accept.split(',')) {
    const [type = '', ...params] = range.split(';').map((part) => part.trim().toLowerCase())
    const q = params.find((p) => p.startsWith('q='))
    if (q !== undefined && Number(q.slice(2)) === 0) continue
    if (type === '*/*' || type === 'application/*' || type === 'application/json' ||
      type === 'application/problem+json' || (type.startsWith('application/') && type.endsWith('+json'))) return true
  }
  return false
}

/** Route config of the rare route that does not answer JSON (Prometheus metrics). */
export interface AcceptRouteConfig { acceptsAnyMediaType?: boolean }

/** Set on an instance (and its children) once the check is installed, so it is never installed twice. */
const INSTALLED = 'portierAcceptCheck'

/** Installs the check unless this instance or an ancestor already has it (a plugin inside a Portier app). */
export function installAcceptCheck (app: FastifyInstance): void {
  if (app.hasDecorator(INSTALLED)) return
  app.decorate(INSTALLED, true)
  app.addHook('onRequest', (request, _reply, done) => {
    const optedOut = (request.routeOptions.config as AcceptRouteConfig | undefined)?.acceptsAnyMediaType === true
    done(optedOut || acceptsJson(request.headers.accept) ? undefined : CommonProblems.notAcceptable())
  })
}
