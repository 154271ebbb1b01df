import type { FastifyInstance } from 'fastify'
import { readBearer } from '../../../common/credentials.js'
import { credentialsMatch } from '../../../common/constant-time.js'
import { isDocumentationPath } from '../../../common/documentation-paths.js'
import type { ProblemFactory } from '../../../common/problem.js'
import { IdentityProblems } from '../../errors.js'

/** The only path of the admin listener that answers without a credential, documentation apart. */
const OPEN_PATHS = new Set(['/healthz'])
const INTERNAL_PREFIX = '/internal/'
/** Prometheus metrics: either credential (see below). */
const METRICS_PATH = '/metrics'

/** What every /admin route can answer for want of the admin credential. */
export const ADMIN_PROBLEMS: readonly ProblemFactory[] = [IdentityProblems.adminUnauthorized]
/** What every /internal route can answer for want of the service credential. */
export const SERVICE_PROBLEMS: readonly ProblemFactory[] = [IdentityProblems.serviceUnauthorized]
/** What /metrics answers without either credential: the listener's refusal outside /internal. */
export const METRICS_PROBLEMS: readonly ProblemFactory[] = ADMIN_PROBLEMS

/**
 * Guards the whole admin listener, before routing: `/internal/*` takes the service
 * credential, everything else the admin credential (compared in constant time). An
 * unknown path answers 401 too, so nobody learns which admin routes exist without
 * a credential.
 *
 * `/metrics` takes either credential. Monitoring inside the cluster holds the service
 * credential, as gateways do, and must not need the admin one, which creates users and
 * keys; operators holding the admin one may read it too. The service credential gains
 * nothing it could act on: the metrics are counts under fixed labels, never an e-mail,
 * a key id or a secret. Without either, it answers `admin_unauthorized` like every
 * path outside /internal.
 *
 * The documentation (`/docs`, its assets under `/docs/`, `/openapi.json`) is open:
 * it describes the API, it gives no access to it, the listener is bound to 127.0.0.1
 * by default, and the operations it lists are public in the source anyway. Only the
 * Swagger UI's routes live under `/docs/`, so the exemption opens nothing else.
 */
export function guardAdminListener (app: FastifyInstance, credentials: { adminToken: string, serviceToken: string }): void {
  app.addHook('onRequest', (request, _reply, done) => {
    const path = request.url.split('?', 1)[0] as string
    if (OPEN_PATHS.has(path) || isDocumentationPath(path)) return done()
    const internal = path.startsWith(INTERNAL_PREFIX)
    const credential = readBearer(request.headers.authorization)
    const accepted = internal
      ? [credentials.serviceToken]
      : path === METRICS_PATH ? [credentials.adminToken, credentials.serviceToken] : [credentials.adminToken]
    if (credential.kind === 'token' && accepted.some((expected) => credentialsMatch(credential.token, expected))) return done()
    done(internal ? IdentityProblems.serviceUnauthorized() : IdentityProblems.adminUnauthorized())
  })
}
