import type { IncomingHttpHeaders } from 'node:http'
import { isIP } from 'node:net'
import type { FastifyRequest } from 'fastify'
import { ConfigError } from '../../common/config.js'
import { METHOD_OVERRIDE_HEADERS } from '../method-override.js'
import type { GateDecision } from '../request-gate.js'

/** Headers a client must never be able to set for the upstream: the gateway's own assertions. */
const PRINCIPAL_HEADER_PREFIX = 'x-portier-'

/**
 * Header names of letters, digits and `-` only. CGI, WSGI, Rack and PHP read a header
 * as `HTTP_` + its name upper-cased with every other character turned into `_`, so
 * `x_portier_principal` or `x.portier.principal` would be read as the gateway's
 * `x-portier-principal` (the same holds for X-Forwarded-For, X-Original-URL…). Like
 * nginx (`underscores_in_headers off`), the gateway drops such names unless allowed.
 */
const PLAIN_NAME = /^[a-z0-9-]+$/

/**
 * Hop-by-hop headers (RFC 9110 §7.6.1) concern the client's connection to the gateway,
 * which answers them itself: Node answers `Expect: 100-continue` (and refuses other
 * expectations with 417), the body is re-framed, no upgrade is proxied. Forwarded, they
 * would be refused by the upstream client (undici) and turn a client's header into an
 * upstream failure. Proxy-Authorization is a credential for a proxy on the way, never
 * for an upstream. Connection and the names it lists are removed by reply-from.
 */
const HOP_BY_HOP = ['connection', 'keep-alive', 'proxy-connection', 'te', 'trailer', 'transfer-encoding', 'upgrade', 'expect',
  'http2-settings', 'proxy-authorization'] as const

/**
 * Headers some frameworks (Symfony, Zend, IIS rewrite, nginx auth_request, Envoy,
 * Spring's X-Forwarded-Prefix) read as the request path or part of it, instead of the
 * request line's: the path the gateway authorised must be the one served. Dropped
 * whoever sends them, trusted proxies included.
 */
const PATH_OVERRIDE_HEADERS = ['x-original-url', 'x-rewrite-url', 'x-original-uri', 'x-forwarded-uri', 'x-forwarded-path',
  'x-forwarded-prefix', 'x-envoy-original-path'] as const

/** Headers only the gateway reads: the client's credential and its inflection choice. */
const GATEWAY_INPUT_HEADERS = ['x-api-key', 'x-api-inflection'] as const

/**
 * Provenance headers: what a proxy says about the client and the connection (address,
 * scheme, host, port, TLS client certificate). Upstreams believe them, so they pass only
 * from a trusted proxy (GATEWAY_TRUST_PROXY); from anyone else they are dropped. The
 * gateway sets X-Forwarded-For, -Proto and -Host itself in every case.
 */
const PROVENANCE_PREFIXES = ['x-forwarded-', 'x-envoy-', 'x-ssl-', 'x-amzn-mtls-', 'ssl-client-'] as const
const PROVENANCE_HEADERS = ['forwarded', 'x-real-ip', 'x-client-ip', 'client-ip', 'true-client-ip', 'cf-connecting-ip',
  'cf-connecting-ipv6', 'fastly-client-ip', 'x-cluster-client-ip', 'x-original-forwarded-for', 'x-original-host', 'x-host',
  'x-remote-ip', 'x-remote-addr', 'x-originating-ip', 'x-proxyuser-ip', 'x-appengine-user-ip', 'x-azure-clientip',
  'x-azure-socketip', 'x-client-cert', 'x-client-verify', 'x-client-dn', 'x-arr-clientcert', 'x-arr-ssl', 'front-end-https',
  'x-url-scheme', 'x-scheme'] as const

const DROPPED = new Set<string>([...HOP_BY_HOP, ...PATH_OVERRIDE_HEADERS, ...METHOD_OVERRIDE_HEADERS, ...GATEWAY_INPUT_HEADERS])
const PROVENANCE = new Set<string>(PROVENANCE_HEADERS)
/** What the gateway sets itself, read or re-frames: an allowed unusual name must not alias one of these either. */
const GATEWAY_SET_HEADERS = ['host', 'authorization', 'content-length', 'content-type', 'x-request-id', 'accept-encoding'] as const

type Disposition = 'keep' | 'drop' | 'provenance'

/** Header names whose disposition is remembered (the common ones are a few dozen). */
const MAX_REMEMBERED_NAMES = 1_024

function dispositionOf (name: string, allowedUnusual: ReadonlySet<string>): Disposition {
  if (!PLAIN_NAME.test(name)) return allowedUnusual.has(name) ? 'keep' : 'drop'
  if (DROPPED.has(name) || name.startsWith(PRINCIPAL_HEADER_PREFIX)) return 'drop'
  if (PROVENANCE.has(name) || PROVENANCE_PREFIXES.some((prefix) => name.startsWith(prefix))) return 'provenance'
  return 'keep'
}

/** A header name as CGI, WSGI, Rack and PHP read it (`HTTP_` apart). */
const cgiName = (name: string): string => name.toUpperCase().replace(/[^A-Z0-9]/g, '_')

/**
 * Problems with the allowed unusual header names, for the options check at start: an
 * allowed name must be one the rule would drop, and must not read, through CGI's
 * folding, as a header the gateway owns, strips or refuses.
 */
export function allowedUnusualHeaderProblems (names: readonly string[]): string[] {
  const owned = [...DROPPED, ...PROVENANCE, ...GATEWAY_SET_HEADERS].map(cgiName)
  const ownedPrefixes = [PRINCIPAL_HEADER_PREFIX, ...PROVENANCE_PREFIXES].map(cgiName)
  const problems: string[] = []
  for (const [i, name] of names.entries()) {
    const where = `allowedUnusualHeaders[${i}]`
    const folded = cgiName(name)
    if (PLAIN_NAME.test(name.toLowerCase())) problems.push(`${where}: ${name} has only letters, digits and -; it is always forwarded`)
    else if (owned.includes(folded) || ownedPrefixes.some((prefix) => folded.startsWith(prefix))) {
      problems.push(`${where}: ${name} reads as a header the gateway sets or strips (${folded}); it cannot be allowed`)
    }
  }
  return problems
}

/**
 * The addresses the gateway can vouch for, nearest first: its peer, then, while each
 * hop is a trusted proxy (Fastify's `request.ips` under `trustProxy`), the address that
 * proxy forwarded for, up to the client. Anything a client wrote further left is
 * dropped, as is an entry that is not an IP address.
 */
function trustedChain (request: FastifyRequest): string[] {
  const peer = request.raw.socket.remoteAddress
  if (peer === undefined) return []
  const ips = request.ips ?? [peer]
  const chain: string[] = []
  for (const address of ips) {
    if (isIP(address) === 0) break
    chain.push(address)
  }
  return chain.length > 0 ? chain : [peer]
}

function forwardedFor (address: string): string {
  return isIP(address) === 6 ? `"[${address}]"` : address
}

export type ForwardHeaders = (request: FastifyRequest, decision: GateDecision, headers: IncomingHttpHeaders) => IncomingHttpHeaders

/**
 * Builds the function that turns the client's headers into the upstream's. Removed:
 * the client's credential (the upstream trusts the gateway's identity headers instead;
 * identity's own routes keep Authorization, identity checks it itself), any
 * `x-portier-*`, names with characters other than letters, digits and `-` (unless
 * allowed by name), hop-by-hop headers, path and method overrides, and provenance
 * headers unless the peer is a trusted proxy. Set: the principal, x-request-id and
 * X-Forwarded-For/-Proto/-Host from what the gateway knows.
 */
export function createForwardHeaders (options: { allowedUnusualHeaders: readonly string[] }): ForwardHeaders {
  const problems = allowedUnusualHeaderProblems(options.allowedUnusualHeaders)
  if (problems.length > 0) throw new ConfigError('portier gateway options', problems)
  const allowedUnusual = new Set(options.allowedUnusualHeaders.map((name) => name.toLowerCase()))
  // Header names repeat from request to request: decide each once. Bounded, so a client inventing names cannot grow it.
  const known = new Map<string, Disposition>()
  const disposition = (name: string): Disposition => {
    let decided = known.get(name)
    if (decided === undefined) {
      decided = dispositionOf(name, allowedUnusual)
      if (known.size < MAX_REMEMBERED_NAMES) known.set(name, decided)
    }
    return decided
  }

  return function forwardHeaders (request, decision, headers) {
    const chain = trustedChain(request)
    // The peer is a proxy the host app trusts, and it said whom it forwarded for.
    const fromTrustedProxy = chain.length > 1
    for (const name of Object.keys(headers)) {
      const decided = disposition(name)
      if (decided === 'drop' || (decided === 'provenance' && !fromTrustedProxy)) delete headers[name]
    }
    if (decision.route.auth !== 'none') delete headers.authorization
    const principal = decision.principal
    if (principal !== null) {
      headers['x-portier-principal'] = principal.id
      headers['x-portier-principal-type'] = principal.kind
      headers['x-portier-permissions'] = principal.permissions.join(',')
    }
    headers['x-request-id'] = request.id
    const socketProtocol = (request.raw.socket as { encrypted?: boolean }).encrypted === true ? 'https' : 'http'
    // What a trusted proxy forwarded in X-Forwarded-Proto (Fastify's request.protocol), when it is a scheme at all.
    const claimed = String(request.protocol).toLowerCase()
    const protocol = claimed === 'https' || claimed === 'http' ? claimed : socketProtocol
    if (chain.length > 0) headers['x-forwarded-for'] = [...chain].reverse().join(', ')
    headers['x-forwarded-proto'] = protocol
    // The gate refused any Host (or trusted X-Forwarded-Host) that is not one host[:port].
    if (request.host !== '') headers['x-forwarded-host'] = request.host
    else delete headers['x-forwarded-host']
    if (fromTrustedProxy && headers.forwarded !== undefined) {
      // RFC 7239 §4: each proxy appends its element: whom it received the request from, over what, for which host.
      const host = request.headers.host
      headers.forwarded = `${String(headers.forwarded)}, for=${forwardedFor(chain[0] as string)};proto=${socketProtocol}` +
        (host !== undefined && host !== '' ? `;host="${host}"` : '')
    }
    // The body will be rewritten: ask for it uncompressed (a body that comes compressed anyway is decoded).
    if (decision.inflection !== null) headers['accept-encoding'] = 'identity'
    return headers
  }
}
