import type { FastifyInstance } from 'fastify'
import { readBearer } from '../../../common/bearer.js'
import { credentialsMatch } from '../../../common/constant-time.js'
import { IdentityProblems } from '../../errors.js'

/** The only path of the admin listener that answers without a credential. */
const OPEN_PATHS = new Set(['/healthz'])
const INTERNAL_PREFIX = '/internal/'

/**
 * Guards the whole admin listener, before routing: `/internal/*` takes the service
 * credential, everything else the admin credential (compared in constant time). An
 * unknown path answers 401 too, so nobody learns which admin routes exist without
 * a credential.
 */
export function guardAdminListener (app: FastifyInstance, credentials: { adminToken: string, serviceToken: string }): void {
  app.addHook('onRequest', (request, _reply, done) => {
    const path = request.url.split('?', 1)[0] as string
    if (OPEN_PATHS.has(path)) return done()
    const internal = path.startsWith(INTERNAL_PREFIX)
    const credential = readBearer(request.headers.authorization)
    const expected = internal ? credentials.serviceToken : credentials.adminToken
    if (credential.kind === 'token' && credentialsMatch(credential.token, expected)) return done()
    done(internal ? IdentityProblems.serviceUnauthorized() : IdentityProblems.adminUnauthorized())
  })
}
