import { convertKey } from './convert-key.js'
import type { KeyCase } from './styles.js'

/** Entries a converter remembers; once full, it keeps them and converts new keys without remembering them. */
export const DEFAULT_MEMO_MAX_ENTRIES = 10_000
/**
 * Longer keys are converted every time instead of being remembered: real APIs repeat
 * short names, and a body with huge unique keys must not pin megabytes after its request.
 */
export const MEMO_MAX_KEY_LENGTH = 128

export interface KeyConverterOptions {
  /** Memo capacity in entries; default DEFAULT_MEMO_MAX_ENTRIES. */
  maxEntries?: number
}

/** Converts keys to one style, remembering recent conversions. */
export interface KeyConverter {
  (key: string): string
  readonly style: KeyCase
  /** Entries currently remembered; never above the capacity. */
  readonly memoSize: number
}

/**
 * A converter for one style with a bounded memo. A list of 1 000 records repeats the
 * same few dozen keys, so after the first record every conversion is one Map lookup.
 * When the memo is full it keeps what it has and stops adding: the keys real traffic
 * repeats are in it by then, and a body of thousands of distinct names (a client's, or
 * a hostile one) can neither evict them nor make every conversion pay for refilling a
 * memo it keeps emptying. No LRU bookkeeping on the hot path.
 */
export function createKeyConverter (style: KeyCase, options: KeyConverterOptions = {}): KeyConverter {
  const maxEntries = options.maxEntries ?? DEFAULT_MEMO_MAX_ENTRIES
  if (!Number.isInteger(maxEntries) || maxEntries < 1) {
    throw new RangeError(`maxEntries must be a positive integer, got ${String(maxEntries)}`)
  }
  const memo = new Map<string, string>()
  const convert = (key: string): string => {
    const known = memo.get(key)
    if (known !== undefined) return known
    const converted = convertKey(key, style)
    if (key.length <= MEMO_MAX_KEY_LENGTH && memo.size < maxEntries) memo.set(key, converted)
    return converted
  }
  return Object.defineProperties(convert, {
    style: { value: style, enumerable: true },
    memoSize: { get: () => memo.size, enumerable: true }
  }) as KeyConverter
}

const shared = new Map<KeyCase, KeyConverter>()

/**
 * The process-wide converter for `style`, shared by every request so the memo stays
 * warm. Its only state is the cache, which never changes a result.
 */
export function keyConverter (style: KeyCase): KeyConverter {
  let converter = shared.get(style)
  if (converter === undefined) {
    converter = createKeyConverter(style)
    shared.set(style, converter)
  }
  return converter
}
