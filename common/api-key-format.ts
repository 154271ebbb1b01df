import { createHash } from 'node:crypto'
import { bytesToBase62, randomBase62 } from './random.js'

/**
 * API key format, shared by identity (which issues keys) and the gateway (which
 * rejects malformed ones without any I/O):
 *
 *   ptk_<lookup id: 12 base62>_<secret: 43 base62><checksum: 6 base62>
 *
 * The lookup id is not secret and indexes the stored hash; 43 base62 characters
 * carry 256 bits; the checksum (SHA-256 of everything before it, truncated) lets a
 * typo or a random string be refused locally, and the fixed prefix lets secret
 * scanners recognise leaked keys.
 */
export const API_KEY_PREFIX = 'ptk_'
const LOOKUP_ID_LENGTH = 12
const SECRET_LENGTH = 43
const CHECKSUM_LENGTH = 6
/** A lookup id alone, as the internal API's schemas check it. */
export const LOOKUP_ID_PATTERN = '^[0-9A-Za-z]{12}$'
export const API_KEY_PATTERN = /^ptk_([0-9A-Za-z]{12})_([0-9A-Za-z]{43})([0-9A-Za-z]{6})$/
export const API_KEY_LENGTH = API_KEY_PREFIX.length + LOOKUP_ID_LENGTH + 1 + SECRET_LENGTH + CHECKSUM_LENGTH

export interface ParsedApiKey {
  lookupId: string
  secret: string
}

function checksumOf (body: string): string {
  return bytesToBase62(createHash('sha256').update(body).digest().subarray(0, 8), CHECKSUM_LENGTH)
}

/** The lookup id of a key `parseApiKey` accepted, without parsing it again (no checksum). */
export function lookupIdOf (wellFormedKey: string): string {
  return wellFormedKey.slice(API_KEY_PREFIX.length, API_KEY_PREFIX.length + LOOKUP_ID_LENGTH)
}

/** Returns the parts of a well-formed key with a valid checksum, or null. */
export function parseApiKey (presented: string): ParsedApiKey | null {
  if (presented.length !== API_KEY_LENGTH) return null
  const match = API_KEY_PATTERN.exec(presented)
  if (match === null) return null
  const [, lookupId, secret, checksum] = match
  if (lookupId === undefined || secret === undefined || checksumOf(presented.slice(0, -CHECKSUM_LENGTH)) !== checksum) return null
  return { lookupId, secret }
}

/** The full key text of a lookup id and a secret, checksum included. */
export function formatApiKey (lookupId: string, secret: string): string {
  const body = `${API_KEY_PREFIX}${lookupId}_${secret}`
  return `${body}${checksumOf(body)}`
}

/**
 * The last 4 characters of a key's text, which identity keeps to show with its prefix
 * (they are checksum characters: nothing about the secret a guesser could use).
 */
export function lastFourOf (key: string): string {
  return key.slice(-4)
}

/** A random lookup id, in the key's alphabet and length. */
export function randomLookupId (): string {
  return randomBase62(LOOKUP_ID_LENGTH)
}

/** A new key: the full text (shown once) and its parts. */
export function generateApiKey (): { key: string, lookupId: string, secret: string } {
  const lookupId = randomLookupId()
  const secret = randomBase62(SECRET_LENGTH)
  return { key: formatApiKey(lookupId, secret), lookupId, secret }
}

/** A random secret, in the key's alphabet and length. */
export function randomSecret (): string {
  return randomBase62(SECRET_LENGTH)
}
