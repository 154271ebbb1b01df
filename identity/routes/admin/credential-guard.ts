import type { FastifyInstance } from 'fastify'
import { readBearer } from '../../../common/bearer.js'
import { credentialsMatch } from '../../../common/constant-time.js'
import type { PortierProblem } from '../../../common/problem.js'

/**
 * Guards an encapsulated route group with a shared-secret Bearer credential,
 * compared in constant time. Used for /admin (admin token) and /internal (service token).
 */
export function guardWithCredential (app: FastifyInstance, expected: string, problem: () => PortierProblem): void {
  app.addHook('onRequest', (request, _reply, done) => {
    const credential = readBearer(request.headers.authorization)
    done(credential.kind === 'token' && credentialsMatch(credential.token, expected) ? undefined : problem())
  })
}
