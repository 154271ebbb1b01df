import type { FastifyInstance } from 'fastify'
import type { IncomingHttpHeaders } from 'node:http'

/**
 * The mock trusts the gateway: whoever reaches it is who `x-portier-principal` says,
 * with the permissions in `x-portier-permissions`. It checks nothing; it reports
 * what it saw so tests can prove what the gateway forwarded.
 */
export interface Principal {
  /** A key id (`key_…`) or a user id; null when the header is absent. */
  id: string | null
  permissions: string[]
}

/** A header as one string: repeated headers joined as Node joins them, absent as ''. */
export function seenHeader (value: string | string[] | undefined): string {
  return Array.isArray(value) ? value.join(', ') : value ?? ''
}

export function readPrincipal (headers: IncomingHttpHeaders): Principal {
  const id = headers['x-portier-principal']
  const permissions = seenHeader(headers['x-portier-permissions']).split(',').map((p) => p.trim()).filter((p) => p !== '')
  return { id: id === undefined ? null : seenHeader(id), permissions }
}

/** Every answer (errors and 404s included) says which principal, permissions and request id arrived. */
export function installPrincipalEcho (app: FastifyInstance): void {
  app.addHook('onSend', (request, reply, _payload, done) => {
    reply.header('x-upstream-principal', seenHeader(request.headers['x-portier-principal']))
    reply.header('x-upstream-permissions', seenHeader(request.headers['x-portier-permissions']))
    reply.header('x-upstream-request-id', seenHeader(request.headers['x-request-id']))
    done()
  })
}
