import type { FastifyInstance } from 'fastify'
import { settleUnreadBody, type UnreadBodyLimits } from './unread-body.js'

/** Set on an instance (and its children) once the hook is installed, so it is never installed twice. */
const INSTALLED = 'portierRequestEcho'

/**
 * What every answer carries, for any app Portier code runs in: the request's id in
 * `x-request-id`, and, when the answer leaves a request body unread, the treatment
 * common/unread-body.ts gives it (discarded with the connection kept, or
 * `Connection: close` and a lingering close). Installed once per app tree: a Portier
 * app installs it at its root, and the gateway plugin inside it finds it there; a host
 * app of another kind gets it from the plugin.
 */
export function installRequestEcho (app: FastifyInstance, unreadBodies: UnreadBodyLimits): void {
  if (app.hasDecorator(INSTALLED)) return
  app.decorate(INSTALLED, true)
  app.addHook('onSend', (request, reply, payload, done) => {
    reply.header('x-request-id', request.id)
    settleUnreadBody(request.raw, unreadBodies, (outcome) => {
      // Fastify asks for a close after a body it refused part way (a 413); a small one is
      // read out instead, and the connection kept if the client keeps it (removing the
      // header would stop Node from saying either).
      if (outcome === 'close') reply.header('connection', 'close')
      else if (outcome === 'keep' && reply.getHeader('connection') === 'close' && reply.raw.shouldKeepAlive) reply.header('connection', 'keep-alive')
      done(null, payload)
    })
  })
}
