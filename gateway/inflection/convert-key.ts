import type { KeyCase } from './styles.js'

/*
 * How one JSON member name is converted when no upstream spelling is known for it (the
 * gateway first reverses through the spellings it has seen; see key-spellings.ts).
 *
 * Keys left unchanged in every style:
 *   - the empty string, and keys with any character other than ASCII letters, digits,
 *     `_` and `-` (spaces, dots, unicode): we cannot know where their words are;
 *   - keys made only of `_`/`-`;
 *   - keys that both start and end with `_`/`-` (`__proto__`, `__typename__`, `_meta_`):
 *     by convention these are reserved names, and renaming them would be a surprise.
 *
 * Otherwise a key is a verbatim prefix of `_`/`-`, words, and a verbatim suffix of `_`/`-`
 * (`_id` → `_` + [id]; `trailing_` → [trailing] + `_`). Words are split at every run of
 * `_` or `-` and at case changes inside a run of letters and digits:
 *   - before an upper-case letter that follows a lower-case letter or a digit
 *     (`userId` → user|Id, `v2Api` → v2|Api, `x_1Y` → x|1|Y);
 *   - before the last upper-case letter of an upper-case run when a lower-case letter
 *     follows it (`HTTPServer` → HTTP|Server), so acronyms stay whole (`userID` → user|ID).
 * A digit never starts a new word by itself: `line1` is one word, `line_1` is two.
 * Words are then lower-cased.
 *
 * Joining:
 *   snake  words joined with `_`                     address_line_1, http_server
 *   dash   words joined with `-`                     address-line-1, http-server
 *   camel  first word as is, the others capitalised  addressLine1, httpServer
 *   pascal every word capitalised                    AddressLine1, HttpServer
 * camel and pascal hold no `_` or `-` but the prefix and suffix, as camelCase clients
 * expect (Rails `camelize`, humps, lodash and camelcase-keys agree on `addressLine1`).
 *
 * Every style splits a key into the same words, so converting to one style and then to
 * another equals converting straight to the second, as far as the words survive: camel
 * and pascal cannot show where a digit or a one-letter word started one, so by these
 * rules alone `addressLine1` reads back as `address_line1` (a digit continues a word, as
 * Rails `underscore` and humps read it) and `xAB` as `x_ab`. The gateway does not rely on
 * the rules for keys it has seen an upstream send: it remembers their spelling.
 */

const UNDERSCORE = 95
const DASH = 45

function isLower (code: number): boolean { return code >= 97 && code <= 122 }
function isUpper (code: number): boolean { return code >= 65 && code <= 90 }
function isDigit (code: number): boolean { return code >= 48 && code <= 57 }
function isSeparator (code: number): boolean { return code === UNDERSCORE || code === DASH }

export interface KeyWords {
  /** The leading `_`/`-` run, kept verbatim. */
  prefix: string
  /** Lower-case words of ASCII letters and digits, never empty. */
  words: string[]
  /** The trailing `_`/`-` run, kept verbatim. */
  suffix: string
}

/** Splits a key into words by the rules above; `undefined` for keys left unchanged. */
export function splitKey (key: string): KeyWords | undefined {
  const length = key.length
  let start = 0
  while (start < length && isSeparator(key.charCodeAt(start))) start++
  let end = length
  while (end > start && isSeparator(key.charCodeAt(end - 1))) end--
  if (start === end) return undefined
  if (start > 0 && end < length) return undefined

  const words: string[] = []
  let wordStart = start
  for (let i = start; i < end; i++) {
    const code = key.charCodeAt(i)
    if (isSeparator(code)) {
      if (i > wordStart) words.push(key.slice(wordStart, i).toLowerCase())
      wordStart = i + 1
    } else if (isUpper(code)) {
      if (i === wordStart) continue
      const previous = key.charCodeAt(i - 1)
      const startsWord = isLower(previous) || isDigit(previous) ||
        (isUpper(previous) && i + 1 < end && isLower(key.charCodeAt(i + 1)))
      if (startsWord) {
        words.push(key.slice(wordStart, i).toLowerCase())
        wordStart = i
      }
    } else if (!isLower(code) && !isDigit(code)) {
      return undefined
    }
  }
  words.push(key.slice(wordStart, end).toLowerCase())
  return { prefix: key.slice(0, start), words, suffix: key.slice(end) }
}

function capitalise (word: string): string {
  return word.charAt(0).toUpperCase() + word.slice(1)
}

function joinCapitalised (words: string[], capitaliseFirst: boolean): string {
  let out = capitaliseFirst ? capitalise(words[0] as string) : words[0] as string
  for (let i = 1; i < words.length; i++) out += capitalise(words[i] as string)
  return out
}

/** Converts one key to `style` (no memo; see createKeyConverter for the cached form). */
export function convertKey (key: string, style: KeyCase): string {
  const split = splitKey(key)
  if (split === undefined) return key
  const { prefix, words, suffix } = split
  switch (style) {
    case 'snake': return prefix + words.join('_') + suffix
    case 'dash': return prefix + words.join('-') + suffix
    case 'camel': return prefix + joinCapitalised(words, false) + suffix
    case 'pascal': return prefix + joinCapitalised(words, true) + suffix
  }
}
