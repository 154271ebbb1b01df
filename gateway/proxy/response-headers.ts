import { isJsonContentType } from './json-bodies.js'

/** Characters an HTTP field value may hold (RFC 9110 §5.5): HTAB, visible ASCII and space, obs-text. */
const NOT_FIELD_VALUE = /[^\t\x20-\x7E\x80-\xFF]/
const NOT_FIELD_VALUES = new RegExp(NOT_FIELD_VALUE.source, 'g')

/** Hop-by-hop (RFC 9110 §7.6.1): about the upstream's connection to the gateway, never the client's. */
const HOP_BY_HOP: ReadonlySet<string> = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'te', 'trailer', 'upgrade'])

/** The gateway's own RateLimit fields describe the policies it enforced; an upstream's would replace them. */
const RATE_LIMIT_FIELDS: ReadonlySet<string> = new Set(['ratelimit', 'ratelimit-policy', 'x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset'])

/** Names the gateway answers with its own value, whatever the upstream said. */
const GATEWAY_OWN: ReadonlySet<string> = new Set(['x-request-id'])

/** Set by an inflected answer from the body it sends (the upstream's describe the body before renaming). */
const BODY_FRAMING: ReadonlySet<string> = new Set(['content-length', 'content-encoding'])

export interface AnswerHeaders {
  /** The request's id, echoed on every answer. */
  requestId: string
  /** The gateway's own fields (RateLimit, Deprecation…), as name, value pairs. */
  own: readonly string[]
  /** Whether the gateway's RateLimit fields are among `own` (the upstream's are then dropped). */
  rateLimited: boolean
  /** The answer's body is renamed: the upstream's framing headers are dropped. */
  inflected: boolean
  /** The gateway is draining: `Connection: close`. */
  closing: boolean
  /** The route's upstream has a cors block: the gateway alone answers Access-Control-* fields, the upstream's are dropped. */
  gatewayCors?: boolean
}

/** A value with anything a field value may not hold removed, so that sending it cannot throw. */
function cleanValue (value: string): string {
  return NOT_FIELD_VALUE.test(value) ? value.replace(NOT_FIELD_VALUES, '') : value
}

/** `Vary` with x-api-inflection added to what the upstream said its answer varies by. */
function varyWithInflection (vary: string | string[] | undefined): string {
  if (vary === undefined) return 'x-api-inflection'
  const joined = Array.isArray(vary) ? vary.join(', ') : vary
  return joined.toLowerCase().split(/\s*,\s*/).includes('x-api-inflection') ? joined : `${joined}, x-api-inflection`
}

/**
 * The client's answer headers from the upstream's, in one pass, as a flat list of
 * names and values (what `writeHead` takes): hop-by-hop headers and the names the
 * upstream's Connection lists removed, values cleaned of characters a field value may
 * not hold (as @fastify/http-proxy does: a bad upstream header must not throw), the
 * upstream's RateLimit fields dropped where the gateway sends its own (its
 * Access-Control-* fields where the gateway answers CORS), and the
 * gateway's own fields, the request id, Vary and the framing of a renamed body added.
 */
export function answerHeaders (upstream: Readonly<Record<string, string | string[] | undefined>>, answer: AnswerHeaders): string[] {
  const connection = upstream.connection
  const listed = typeof connection === 'string' && connection !== 'keep-alive' && connection !== 'close'
    ? new Set(connection.toLowerCase().split(',').map((name) => name.trim()))
    : null
  const out: string[] = []
  const dropCors = answer.gatewayCors === true
  for (const name in upstream) {
    const value = upstream[name]
    if (value === undefined || HOP_BY_HOP.has(name) || GATEWAY_OWN.has(name) || name === 'vary') continue
    // An upstream's own grant must not widen, or contradict, what its cors block allows.
    if (dropCors && name.startsWith('access-control-')) continue
    if ((answer.rateLimited && RATE_LIMIT_FIELDS.has(name)) || (answer.inflected && BODY_FRAMING.has(name))) continue
    if (listed !== null && listed.has(name)) continue
    if (typeof value === 'string') out.push(name, cleanValue(value))
    else for (const item of value) out.push(name, cleanValue(item))
  }
  for (const item of answer.own) out.push(item)
  out.push('x-request-id', answer.requestId)
  const vary = upstream.vary
  // Every JSON answer past the checks could have been inflected: say so to caches.
  if (isJsonContentType(upstream['content-type'])) out.push('vary', varyWithInflection(vary))
  else if (vary !== undefined) out.push('vary', Array.isArray(vary) ? vary.map(cleanValue).join(', ') : cleanValue(vary))
  if (answer.closing) out.push('connection', 'close')
  return out
}
