import type { FastifyInstance } from 'fastify'
import { readBearer } from '../../../common/bearer.js'
import { credentialsMatch } from '../../../common/constant-time.js'
import { isDocumentationPath } from '../../../common/documentation-paths.js'
import type { ProblemFactory } from '../../../common/problem.js'
import { IdentityProblems } from '../../errors.js'

/** The only path of the admin listener that answers without a credential, documentation apart. */
const OPEN_PATHS = new Set(['/healthz'])
const INTERNAL_PREFIX = '/internal/'

/** What every /admin route can answer for want of the admin credential. */
export const ADMIN_PROBLEMS: readonly ProblemFactory[] = [IdentityProblems.adminUnauthorized]
/** What every /internal route can answer for want of the service credential. */
export const SERVICE_PROBLEMS: readonly ProblemFactory[] = [IdentityProblems.serviceUnauthorized]

/**
 * Guards the whole admin listener, before routing: `/internal/*` takes the service
 * credential, everything else the admin credential (compared in constant time). An
 * unknown path answers 401 too, so nobody learns which admin routes exist without
 * a credential.
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
    const expected = internal ? credentials.serviceToken : credentials.adminToken
    if (credential.kind === 'token' && credentialsMatch(credential.token, expected)) return done()
    done(internal ? IdentityProblems.serviceUnauthorized() : IdentityProblems.adminUnauthorized())
  })
}
