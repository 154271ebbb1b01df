import { convertKey } from './convert-key.js'
import type { KeyCase } from './styles.js'

/** Entries a converter remembers before it forgets them all and starts again. */
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
 * When the memo is full it is cleared rather than evicted entry by entry: simpler and
 * cheaper than LRU bookkeeping on the hot path, and a working set that fits refills it
 * within one body.
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
    if (key.length <= MEMO_MAX_KEY_LENGTH) {
      if (memo.size >= maxEntries) memo.clear()
      memo.set(key, converted)
    }
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
