const QUOTE = 0x22
const BACKSLASH = 0x5c
const COLON = 0x3a

/**
 * The object members of a JSON text, counted on its bytes without parsing it: in valid
 * JSON every member has exactly one `:` outside strings, and no other `:` is outside a
 * string (UTF-8 never encodes another character with these bytes). Stops counting once
 * past `stopAfter` and returns that count, so a body that is too wide costs one partial
 * scan, not a parse. For invalid JSON the count means nothing; the parse refuses it anyway.
 */
export function countMembers (bytes: Uint8Array, stopAfter: number = Number.POSITIVE_INFINITY): number {
  let members = 0
  let inString = false
  const length = bytes.length
  for (let i = 0; i < length; i++) {
    const byte = bytes[i] as number
    if (inString) {
      if (byte === BACKSLASH) i++
      else if (byte === QUOTE) inString = false
    } else if (byte === QUOTE) {
      inString = true
    } else if (byte === COLON && ++members > stopAfter) {
      return members
    }
  }
  return members
}
