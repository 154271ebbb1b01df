/**
 * Reading the credentials a request presents, for every listener that takes one:
 * `Authorization: Bearer <token>` (RFC 6750 §2.1: the scheme is case-insensitive,
 * one space, then a b64token; anything else is malformed, including a second scheme
 * or spaces inside the token) and, at the gateway, `x-api-key`. Only the reading is
 * here: what a refusal says is in the problem tables.
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

/** The header an API key is presented in. */
export const API_KEY_HEADER = 'x-api-key'

/** The one credential a gateway request may carry, as presented (its validity is checked after). */
export type PresentedCredential =
  | { kind: 'none' }
  /** An API key and an Authorization header at once: which one counts would be a guess. */
  | { kind: 'conflicting' }
  | { kind: 'api_key', key: string }
  | { kind: 'bearer', token: string }
  | { kind: 'malformed_bearer' }

export function readCredential (headers: { [API_KEY_HEADER]?: string | string[] | undefined, authorization?: string | string[] | undefined }): PresentedCredential {
  const apiKey = headers[API_KEY_HEADER]
  const authorization = headers.authorization
  if (apiKey !== undefined && authorization !== undefined) return { kind: 'conflicting' }
  // Repeated x-api-key headers are one malformed key (Node joins them with ", "): its format check refuses it without I/O.
  if (apiKey !== undefined) return { kind: 'api_key', key: Array.isArray(apiKey) ? apiKey.join(', ') : apiKey }
  const bearer = readBearer(authorization)
  if (bearer.kind === 'token') return { kind: 'bearer', token: bearer.token }
  return bearer.kind === 'malformed' ? { kind: 'malformed_bearer' } : { kind: 'none' }
}
