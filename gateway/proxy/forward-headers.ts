import type { IncomingHttpHeaders } from 'node:http'
import type { FastifyRequest } from 'fastify'
import type { GateDecision } from '../request-gate.js'

/** Headers a client must never be able to set for the upstream: the gateway's own assertions. */
const PRINCIPAL_HEADER_PREFIX = 'x-portier-'

/**
 * Headers some frameworks (Symfony, Zend, IIS rewrite) read as the request path instead
 * of the request line's: the path the gateway authorised must be the one served.
 */
const PATH_OVERRIDE_HEADERS = ['x-original-url', 'x-rewrite-url'] as const

/**
 * The request headers the upstream receives. The client's credential is removed (the
 * upstream trusts the gateway's identity headers instead), any client-sent
 * `x-portier-*` is dropped so it cannot impersonate, so are path overrides, and
 * X-Forwarded-For gains the peer address so identity records the real client IP (when
 * it trusts the gateway).
 * Identity's own routes keep the Authorization header: identity checks it itself.
 */
export function forwardHeaders (request: FastifyRequest, decision: GateDecision, headers: IncomingHttpHeaders): IncomingHttpHeaders {
  for (const name of Object.keys(headers)) {
    if (name.startsWith(PRINCIPAL_HEADER_PREFIX)) delete headers[name]
  }
  for (const name of PATH_OVERRIDE_HEADERS) delete headers[name]
  delete headers['x-api-key']
  delete headers['x-api-inflection']
  if (decision.route.auth !== 'none') delete headers.authorization
  const principal = decision.principal
  if (principal !== null) {
    headers['x-portier-principal'] = principal.id
    headers['x-portier-principal-type'] = principal.kind
    headers['x-portier-permissions'] = principal.permissions.join(',')
  }
  headers['x-request-id'] = request.id
  const peer = request.raw.socket.remoteAddress
  if (peer !== undefined) {
    const previous = headers['x-forwarded-for']
    headers['x-forwarded-for'] = previous === undefined ? peer : `${String(previous)}, ${peer}`
  }
  headers['x-forwarded-proto'] = request.protocol
  if (request.headers.host !== undefined) headers['x-forwarded-host'] = request.headers.host
  // The body will be rewritten: ask for it uncompressed (a body that comes compressed anyway is decoded).
  if (decision.inflection !== null) headers['accept-encoding'] = 'identity'
  return headers
}
