import type { FastifyInstance } from 'fastify'
import { closeIfBodyPending } from './request-body.js'

/** Set on an instance (and its children) once the hook is installed, so it is never installed twice. */
const INSTALLED = 'portierRequestEcho'

/**
 * What every answer carries, for any app Portier code runs in: the request's id in
 * `x-request-id`, and `Connection: close` when the answer leaves a request body unread
 * (common/request-body.ts). Installed once per app tree: a Portier app installs it at
 * its root, and the gateway plugin inside it finds it there; a host app of another
 * kind gets it from the plugin.
 */
export function installRequestEcho (app: FastifyInstance): void {
  if (app.hasDecorator(INSTALLED)) return
  app.decorate(INSTALLED, true)
  app.addHook('onSend', (request, reply, _payload, done) => {
    reply.header('x-request-id', request.id)
    closeIfBodyPending(request, reply)
    done()
  })
}
