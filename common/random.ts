import { randomBytes } from 'node:crypto'

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'

/**
 * Uniformly random base62 text from the system CSPRNG (rejection sampling: bytes
 * ≥ 248 are dropped so that no character is more likely than another).
 */
export function randomBase62 (length: number): string {
  let out = ''
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte < 248) out += BASE62[byte % 62]
      if (out.length === length) break
    }
  }
  return out
}

/** Encodes bytes as base62 of a fixed width (used for checksums). */
export function bytesToBase62 (bytes: Buffer, width: number): string {
  let n = BigInt(`0x${bytes.toString('hex')}`)
  let out = ''
  for (let i = 0; i < width; i++) {
    out = BASE62[Number(n % 62n)] + out
    n /= 62n
  }
  return out
}

/** A prefixed random identifier, e.g. `usr_3kQ9…`; ~95 bits of randomness. */
export function newId (prefix: string): string {
  return `${prefix}_${randomBase62(16)}`
}
