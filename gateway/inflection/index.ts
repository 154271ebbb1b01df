import { keyConverter } from './key-converter.js'
import type { KeyCase } from './styles.js'
import { inflectOwnedKeys } from './transform.js'

export { ALLOWED_INFLECTION_VALUES, KEY_CASES, isKeyCase, parseInflectionHeader } from './styles.js'
export type { InflectionRequest, KeyCase } from './styles.js'
export { convertKey, splitKey } from './convert-key.js'
export type { KeyWords } from './convert-key.js'
export { DEFAULT_MEMO_MAX_ENTRIES, MEMO_MAX_KEY_LENGTH, createKeyConverter, keyConverter } from './key-converter.js'
export type { KeyConverter, KeyConverterOptions } from './key-converter.js'
export { countMembers } from './count-members.js'
export { DEFAULT_MAX_DEPTH, InflectionDepthError, InflectionMembersError, inflectKeys, inflectOwnedKeys } from './transform.js'
export type { InflectOptions } from './transform.js'

/**
 * For callers holding raw JSON text: parse, convert every key to `style` with the shared
 * converter, serialise. Throws SyntaxError for invalid JSON and InflectionDepthError
 * beyond `maxDepth` (default 512).
 */
export function inflectJsonText (text: string, style: KeyCase, maxDepth?: number): string {
  const options = maxDepth === undefined ? {} : { maxDepth }
  return JSON.stringify(inflectOwnedKeys(JSON.parse(text), keyConverter(style), options))
}
