import { queryStringProblem } from '../../common/query-string.js'
import type { NormalisedPath } from './types.js'

/** Longest path accepted, in characters, query excluded. */
export const MAX_PATH_LENGTH = 2_048

const PERCENT = 0x25
const SLASH = 0x2f
const SEMICOLON = 0x3b
const BACKSLASH = 0x5c

const strictUtf8 = new TextDecoder('utf-8', { fatal: true })

const refuse = (reason: string): NormalisedPath => ({ ok: false, reason, part: 'path' })

function hexValue (code: number): number {
  if (code >= 0x30 && code <= 0x39) return code - 0x30
  const lower = code | 0x20
  return lower >= 0x61 && lower <= 0x66 ? lower - 0x61 + 10 : -1
}

/** RFC 3986 §2.3 unreserved, minus `.` (an encoded dot is refused outright). */
function isUnreservedNotDot (byte: number): boolean {
  return (byte >= 0x30 && byte <= 0x39) || ((byte | 0x20) >= 0x61 && (byte | 0x20) <= 0x7a) ||
    byte === 0x2d || byte === 0x5f || byte === 0x7e
}

/** Bytes that change a path's meaning once an upstream decodes them: `.` `/` `\` NUL. */
function isStructuralByte (byte: number): boolean {
  return byte === 0x2e || byte === SLASH || byte === BACKSLASH || byte === 0
}

type EscapeRun = { ok: true, text: string, end: number } | { ok: false, reason: string }

/**
 * Reads the run of `%XX` escapes starting at `start`. Encoded unreserved characters
 * are decoded (RFC 3986 §6.2.2.2): the router decodes them before matching, so a path
 * must not reach the reserved-prefix check or the upstream in another spelling than
 * the one matched (`/%61dmin` is `/admin`). Every other escape is kept as written.
 */
function readEscapes (raw: string, start: number): EscapeRun {
  const bytes: number[] = []
  let text = ''
  let i = start
  while (i < raw.length && raw.charCodeAt(i) === PERCENT) {
    const high = hexValue(raw.charCodeAt(i + 1))
    const low = hexValue(raw.charCodeAt(i + 2))
    if (high < 0 || low < 0) return { ok: false, reason: 'malformed percent-escape' }
    const byte = high * 16 + low
    if (isStructuralByte(byte)) return { ok: false, reason: 'percent-encoded dot, slash, backslash or NUL' }
    // `..%3b` is `..;` to an upstream that decodes before it strips matrix parameters.
    if (byte === SEMICOLON) return { ok: false, reason: 'percent-encoded semicolon (matrix parameters)' }
    if (byte < 0x20 || byte === 0x7f) return { ok: false, reason: 'percent-encoded control character' }
    bytes.push(byte)
    text += isUnreservedNotDot(byte) ? String.fromCharCode(byte) : raw.slice(i, i + 3)
    i += 3
  }
  try {
    strictUtf8.decode(Uint8Array.from(bytes))
  } catch {
    // Overlong forms (`%c0%ae` is a dot to lenient decoders), stray or truncated bytes.
    return { ok: false, reason: 'percent-escapes that are not valid UTF-8' }
  }
  return { ok: true, text, end: i }
}

/** Checks every character of the path and returns it with unreserved escapes decoded. */
function scan (raw: string): { ok: true, path: string } | { ok: false, reason: string } {
  let path = ''
  // Characters from `copied` on are appended in one slice when an escape or the end comes.
  let copied = 0
  let i = 0
  while (i < raw.length) {
    const code = raw.charCodeAt(i)
    if (code === PERCENT) {
      const run = readEscapes(raw, i)
      if (!run.ok) return run
      path += raw.slice(copied, i) + run.text
      i = copied = run.end
      continue
    }
    if (code <= 0x20 || code >= 0x7f) return { ok: false, reason: 'control, space or non-ASCII character (percent-encode it)' }
    // Some servers read `\` as `/`; `;` starts matrix parameters (`/..;/admin` on Tomcat).
    if (code === BACKSLASH) return { ok: false, reason: 'backslash' }
    if (code === SEMICOLON) return { ok: false, reason: 'semicolon (matrix parameters)' }
    i++
  }
  return { ok: true, path: path + raw.slice(copied) }
}

/**
 * Turns `request.url` into the one path the gateway authorises, matches and forwards,
 * or refuses it. Refused: anything that some server on the way might read as a
 * different path (dot segments raw or encoded, encoded `/` or `\`, `;`, overlong
 * UTF-8, double-encoded `%2e %2f %5c %00`), malformed or control escapes, raw control
 * or non-ASCII characters, `#`, empty segments, segments ending in `.`, paths over
 * 2048 characters and anything not starting with `/`. Normalised: one trailing slash
 * removed, encoded unreserved characters decoded; letter case and other escapes are
 * left alone. The query string is checked for syntax only (well-formed escapes, no raw
 * control, space or non-ASCII character: `part: 'query'` when refused) and returned
 * raw, with its `?`: it is forwarded apart from the path, so `?next=/..` is a value,
 * never a path to normalise or refuse.
 */
export function normalisePath (rawUrl: string): NormalisedPath {
  // A request target never carries a fragment (RFC 9112 §3.2); clients strip it.
  if (rawUrl.includes('#')) return refuse('fragment (#) in the request target')
  const queryAt = rawUrl.indexOf('?')
  const raw = queryAt === -1 ? rawUrl : rawUrl.slice(0, queryAt)
  const search = queryAt === -1 ? '' : rawUrl.slice(queryAt)
  if (raw.length > MAX_PATH_LENGTH) return refuse(`path longer than ${MAX_PATH_LENGTH} characters`)
  if (raw.charCodeAt(0) !== SLASH) return refuse('the path must start with /')
  const scanned = scan(raw)
  if (!scanned.ok) return refuse(scanned.reason)
  const queryProblem = queryStringProblem(search)
  if (queryProblem !== null) return { ok: false, reason: queryProblem, part: 'query' }
  const path = scanned.path
  // `%252e` is `%2e` to an upstream that decodes twice.
  if (/%25(?:2e|2f|5c|00)/i.test(path)) return refuse('double percent-encoded dot, slash, backslash or NUL')
  if (path === '/') return { ok: true, path, search }
  const segments = path.slice(1).split('/')
  // One trailing slash is dropped (`/users/` is `/users`); `//` is never the root.
  if (segments.length > 1 && segments.at(-1) === '') segments.pop()
  for (const segment of segments) {
    if (segment === '') return refuse('empty path segment (//)')
    if (segment === '.' || segment === '..') return refuse('dot segment (. or ..)')
    // Windows and some file servers drop trailing dots: `/users.` would be `/users`.
    if (segment.endsWith('.')) return refuse('path segment ending in a dot')
  }
  return { ok: true, path: `/${segments.join('/')}`, search }
}
