const PERCENT = 0x25

function isHexDigit (code: number): boolean {
  const lower = code | 0x20
  return (code >= 0x30 && code <= 0x39) || (lower >= 0x61 && lower <= 0x66)
}

/** The query string of a request target, with its `?` (empty when there is none). */
export function searchOf (url: string): string {
  const at = url.indexOf('?')
  return at === -1 ? '' : url.slice(at)
}

/**
 * Why a query string (with or without its `?`) is refused, or null. Only its syntax is
 * checked (RFC 3986 §3.4): every `%` starts a two-hex-digit escape, and no raw control,
 * space or non-ASCII character appears. A malformed escape is the client's error; left
 * in, it becomes a 500 in whichever parser decodes it strictly (a URL builder, a
 * framework's query parser). What the names and values mean is the upstream's business.
 */
export function queryStringProblem (search: string): string | null {
  for (let i = 0; i < search.length; i++) {
    const code = search.charCodeAt(i)
    if (code === PERCENT) {
      if (!isHexDigit(search.charCodeAt(i + 1)) || !isHexDigit(search.charCodeAt(i + 2))) return 'malformed percent-escape'
      i += 2
    } else if (code <= 0x20 || code >= 0x7f) {
      return 'control, space or non-ASCII character (percent-encode it)'
    }
  }
  return null
}
