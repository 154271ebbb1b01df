import type { FastifyInstance, FastifyRequest } from 'fastify'

/** Peers reported at most once each, and at most this many: a scan of addresses cannot grow memory or flood the log. */
const MAX_PEERS_REPORTED = 64

const FORWARDING_HEADERS = ['x-forwarded-for', 'forwarded', 'x-real-ip'] as const

/**
 * True when the request's client address came from X-Forwarded-For, i.e. the peer is
 * a trusted proxy and the header was read. Fastify defines `ips` only when some proxy
 * is trusted; it then starts with the peer and goes on as long as hops are trusted.
 */
function forwardedAddressUsed (request: FastifyRequest): boolean {
  return request.headers['x-forwarded-for'] !== undefined && (request.ips?.length ?? 0) >= 2
}

/**
 * Warns once per peer when requests carry forwarding headers that identity does not
 * use: a gateway or load balancer in front that IDENTITY_TRUST_PROXY does not name.
 * Identity then takes the peer for the client of every request it forwards: one
 * per-IP login throttle for everyone behind it (so a few bad logins lock out all),
 * and sessions recording the proxy's address.
 */
export function warnOnUntrustedForwarding (app: FastifyInstance, trustProxy: boolean | string): void {
  const reported = new Set<string>()
  const setting = trustProxy === false ? 'unset' : `"${String(trustProxy)}"`
  app.addHook('onRequest', (request, _reply, done) => {
    if (reported.size < MAX_PEERS_REPORTED) {
      const peer = request.raw.socket.remoteAddress
      const present = FORWARDING_HEADERS.filter((name) => request.headers[name] !== undefined)
      if (peer !== undefined && present.length > 0 && !reported.has(peer) && !forwardedAddressUsed(request)) {
        reported.add(peer)
        request.log.warn({ peer, headers: present },
          `requests from ${peer} carry ${present.join(', ')}, which identity does not use (IDENTITY_TRUST_PROXY is ${setting}): ` +
          `per-IP login throttling and session records see ${peer} as the client of every request it forwards. ` +
          `If ${peer} is a gateway or a proxy, add it to IDENTITY_TRUST_PROXY (and the proxies in front of it); ` +
          'identity reads the client address from X-Forwarded-For only')
      }
    }
    done()
  })
}

/**
 * A start-up warning for IDENTITY_TRUST_PROXY=true: every peer's X-Forwarded-For is then
 * believed, so a client that reaches identity directly picks its own address, and with
 * it a fresh per-IP login budget for each request.
 */
export function trustEveryoneWarning (trustProxy: boolean | string): string | null {
  if (trustProxy !== true) return null
  return 'IDENTITY_TRUST_PROXY=true believes X-Forwarded-For from any peer: a client that reaches identity directly ' +
    'chooses the address per-IP login throttling counts. Set it to the gateways\' addresses (and the proxies in front of them) instead, ' +
    'or make sure nothing else can reach identity\'s public port'
}
