import { isIP } from 'node:net'
import type { FastifyRequest } from 'fastify'
import { ConfigError } from '../../common/config.js'
import { API_KEY_HEADER } from '../../common/credentials.js'
import { METHOD_OVERRIDE_HEADERS } from '../method-override.js'
import type { Principal } from '../auth/authenticate.js'

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

/** Names the gateway sets itself on the forwarded request: the client's are never passed on. */
const REPLACED = new Set(['host', 'content-length', 'x-request-id', 'x-forwarded-for', 'x-forwarded-proto', 'x-forwarded-host', 'forwarded'])

/** Header names a Connection header lists (RFC 9110 §7.6.1): hop-by-hop too. Null for none beyond the usual. */
function listedInConnection (connection: string | undefined): Set<string> | null {
  if (connection === undefined || connection === 'keep-alive' || connection === 'close') return null
  return new Set(connection.toLowerCase().split(',').map((name) => name.trim()))
}

/** What the forwarded request is built from: the route's facts, and who is calling. */
export interface Forwarding {
  /** Identity's own routes keep Authorization (identity checks it); every other route's is the client's credential. */
  keepsAuthorization: boolean
  /**
   * Identity's own routes keep x-api-key too: identity answers a key sent to self-service
   * (/me) as no credential, even beside a valid Bearer, so it must see that one was sent.
   * The key goes to the service that issued it, and to no other.
   */
  keepsApiKey?: boolean
  /** The body will be inflected: ask for it uncompressed. */
  inflected: boolean
  principal: Principal | null
  /** The Host the gateway vouched for ('' for none). */
  host: string
  /**
   * When the request is traced: the traceparent and tracestate of the gateway's call
   * (name, value pairs), which replace the client's. Untraced, the client's pass as sent.
   */
  trace?: readonly string[] | undefined
}

/** The W3C Trace Context headers: the gateway's own when it traces the call. */
const TRACE_CONTEXT = new Set(['traceparent', 'tracestate'])

/** The upstream's request headers, as a flat list of names and values (what undici takes). */
export type ForwardHeaders = (request: FastifyRequest, forwarding: Forwarding) => string[]

/**
 * Builds the function that turns the client's headers into the upstream's, in one pass
 * over them. Removed: the client's credential (the upstream trusts the gateway's
 * identity headers instead; identity's own routes keep Authorization, identity checks it
 * itself), any `x-portier-*`, names with characters other than letters, digits and `-`
 * (unless allowed by name), hop-by-hop headers and those Connection lists, path and
 * method overrides, and provenance headers unless the peer is a trusted proxy. Set: the
 * principal, x-request-id and X-Forwarded-For/-Proto/-Host from what the gateway knows,
 * Forwarded extended by a hop when a trusted proxy sent one; Host is the upstream's
 * (undici's) and Content-Length the body's.
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

  return function forwardHeaders (request, forwarding) {
    const chain = trustedChain(request)
    // The peer is a proxy the host app trusts, and it said whom it forwarded for.
    const fromTrustedProxy = chain.length > 1
    const headers = request.headers
    const listed = listedInConnection(headers.connection)
    const out: string[] = []
    for (const name in headers) {
      const value = headers[name]
      if (value === undefined) continue
      const decided = disposition(name)
      const keptKey = name === API_KEY_HEADER && forwarding.keepsApiKey === true
      if ((decided === 'drop' && !keptKey) || (decided === 'provenance' && !fromTrustedProxy) || REPLACED.has(name)) continue
      if ((name === 'authorization' && !forwarding.keepsAuthorization) || (name === 'accept-encoding' && forwarding.inflected)) continue
      if (listed !== null && listed.has(name)) continue
      if (forwarding.trace !== undefined && TRACE_CONTEXT.has(name)) continue
      if (typeof value === 'string') out.push(name, value)
      else for (const item of value) out.push(name, item)
    }
    if (forwarding.principal !== null) out.push(...forwarding.principal.forwardedHeaders)
    out.push('x-request-id', request.id)
    if (forwarding.trace !== undefined) out.push(...forwarding.trace)
    const socketProtocol = (request.raw.socket as { encrypted?: boolean }).encrypted === true ? 'https' : 'http'
    // What a trusted proxy forwarded in X-Forwarded-Proto (Fastify's request.protocol), when it is a scheme at all.
    const claimed = String(request.protocol).toLowerCase()
    const protocol = claimed === 'https' || claimed === 'http' ? claimed : socketProtocol
    const [peer] = chain
    if (peer !== undefined) out.push('x-forwarded-for', chain.length === 1 ? peer : [...chain].reverse().join(', '))
    out.push('x-forwarded-proto', protocol)
    // The route stage refused any Host (or trusted X-Forwarded-Host) that is not one host[:port].
    if (forwarding.host !== '') out.push('x-forwarded-host', forwarding.host)
    const forwarded = headers.forwarded
    if (fromTrustedProxy && forwarded !== undefined && peer !== undefined) {
      // RFC 7239 §4: each proxy appends its element: whom it received the request from, over what, for which host.
      const host = headers.host
      out.push('forwarded', `${forwarded}, for=${forwardedFor(peer)};proto=${socketProtocol}` +
        (host !== undefined && host !== '' ? `;host="${host}"` : ''))
    }
    // The body will be rewritten: ask for it uncompressed (a body that comes compressed anyway is decoded).
    if (forwarding.inflected) out.push('accept-encoding', 'identity')
    return out
  }
}
