import type { FastifyInstance, FastifyRequest } from 'fastify'
import { notePrincipal } from '../../common/logger.js'
import { runAs, type AuditActor, type AuditContext } from '../services/audit-context.js'

declare module 'fastify' {
  interface FastifyRequest {
    /**
     * Who this request acts as, for the audit trail: anonymous until a credential
     * check names the actor (the admin guard, a self-service route's Bearer check).
     */
    auditContext: AuditContext
  }
}

/** Longest user agent an audit record keeps (display only). */
const MAX_USER_AGENT_LENGTH = 512

const ANONYMOUS: AuditActor = Object.freeze({ type: 'anonymous', id: null })

/**
 * Names the actor of the request once its credential is checked: what its services
 * record from then on, and who its access line names (a user, or the admin token).
 */
export function actAs (request: FastifyRequest, actor: AuditActor): void {
  request.auditContext.actor = actor
  if (actor.type === 'user' || actor.type === 'admin_token') notePrincipal(request, { type: actor.type, id: actor.id })
}

/**
 * Gives every request of `app` an audit context (client address, user agent, request id)
 * and runs its handler inside it, so that the services it calls record who acted. The
 * context object is the request's own: a credential check in a later hook names the actor
 * on it (actAs), and the handler sees the change.
 */
export function bindAuditContext (app: FastifyInstance): void {
  app.decorateRequest('auditContext', null as unknown as AuditContext)
  app.addHook('onRequest', (request, _reply, done) => {
    const userAgent = request.headers['user-agent']
    request.auditContext = {
      actor: ANONYMOUS,
      source: { ip: request.ip, userAgent: userAgent === undefined ? null : userAgent.slice(0, MAX_USER_AGENT_LENGTH), requestId: request.id }
    }
    done()
  })
  // After body parsing: the stream events that parse a body do not run in the request's context.
  app.addHook('preHandler', (request, _reply, done) => { runAs(request.auditContext, done) })
}
