import { isIPv6 } from 'node:net'

/** A DNS name is at most 253 characters; with `:65535` and brackets, 262 covers every valid Host. */
const MAX_HOST_LENGTH = 262
/**
 * A registered name or IPv4 address: RFC 3986 §3.2.2 reg-name without percent-escapes
 * and sub-delimiters. `,` `;` `'` `(` and the like are legal there but no real host has
 * them, and an upstream splitting or quoting X-Forwarded-Host on them would misread it.
 */
const NAME = /^[A-Za-z0-9._~-]+$/
const PORT = /^[0-9]{1,5}$/

/**
 * Why a Host value (or the host a trusted proxy forwarded) is refused, or null: it must
 * be one host[:port] (RFC 9110 §7.2): a name or IPv4 address, or an IPv6 address in
 * brackets, and a port of digits up to 65535. An empty value is allowed (RFC 9112 §3.2:
 * a target without authority); the gateway then sends no X-Forwarded-Host.
 */
export function hostProblem (value: string): string | null {
  if (value === '') return null
  if (value.length > MAX_HOST_LENGTH) return 'longer than a host name and port can be'
  let host = value
  let port: string | undefined
  if (value.startsWith('[')) {
    const close = value.indexOf(']')
    if (close === -1 || !isIPv6(value.slice(1, close))) return 'not an IPv6 address in brackets'
    host = value.slice(0, close + 1)
    const rest = value.slice(close + 1)
    if (rest !== '') {
      if (!rest.startsWith(':')) return 'not host[:port]'
      port = rest.slice(1)
    }
  } else {
    const colon = value.indexOf(':')
    if (colon !== -1) {
      host = value.slice(0, colon)
      port = value.slice(colon + 1)
    }
    if (!NAME.test(host)) return 'not a host name or address (letters, digits, . _ ~ -)'
  }
  if (port !== undefined && (!PORT.test(port) || Number(port) > 65_535)) return 'the port is not a number up to 65535'
  return null
}
