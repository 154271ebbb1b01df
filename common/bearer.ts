/**
 * Reads `Authorization: Bearer <token>` (RFC 6750 §2.1): the scheme is
 * case-insensitive, one space, then a b64token. Anything else is malformed,
 * including a second scheme or spaces inside the token.
 */
export type BearerCredential =
  | { kind: 'missing' }
  | { kind: 'malformed' }
  | { kind: 'token', token: string }

/** RFC 6750 §2.1 b64token: what a configured Bearer credential must be made of to be presentable at all. */
export const B64TOKEN_PATTERN = '^[A-Za-z0-9\\-._~+/]+=*$'
const BEARER = /^Bearer ([A-Za-z0-9\-._~+/]+=*)$/i
/** Longer than any token we issue by far; bounds work on hostile input. */
const MAX_TOKEN_LENGTH = 8_192

export function readBearer (header: string | string[] | undefined): BearerCredential {
  if (header === undefined) return { kind: 'missing' }
  if (Array.isArray(header) || header.length > MAX_TOKEN_LENGTH) return { kind: 'malformed' }
  const match = BEARER.exec(header)
  return match === null ? { kind: 'malformed' } : { kind: 'token', token: match[1] as string }
}
