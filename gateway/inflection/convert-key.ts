import type { KeyCase } from './styles.js'

/*
 * How one JSON member name is converted. The rules are chosen so that every snake_case
 * (or dash-case) key an upstream sends comes back unchanged when a client returns it in
 * the case it received it in: snake → any style → snake is the identity.
 *
 * Keys left unchanged in every style:
 *   - the empty string, and keys with any character other than ASCII letters, digits,
 *     `_` and `-` (spaces, dots, unicode): we cannot know where their words are;
 *   - keys made only of `_`/`-`;
 *   - keys that both start and end with `_`/`-` (`__proto__`, `__typename__`, `_meta_`):
 *     by convention these are reserved names, and renaming them would be a surprise;
 *   - keys with two or more separators in a row between words (`a__b`, `a-_b`):
 *     collapsing them could not be undone.
 *
 * Otherwise a key is a verbatim prefix of `_`/`-`, words, and a verbatim suffix of `_`/`-`
 * (`_id` → `_` + [id]; `trailing_` → [trailing] + `_`). Words are split at every single
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
 *   camel  first word as is, the others capitalised  addressLine_1, httpServer
 *   pascal every word capitalised                    AddressLine_1, HttpServer
 * In camel and pascal a `_` is kept before a word whose start would otherwise be
 * invisible, so the key can be split again the same way:
 *   - a word that starts with a digit (`address_line_1` → `addressLine_1`, not
 *     `addressLine1`, which would read back as `address_line1`);
 *   - a word that would merge with a preceding one-letter capitalised word into what
 *     reads as an acronym (`x_a_b` → `xA_B`, not `xAB`, which reads back as `x_ab`;
 *     `is_a_number` → `isANumber` needs no `_`).
 *
 * Every style splits a key into the same words, so converting to one style and then to
 * another equals converting straight to the second (tested on generated keys). Keys an
 * upstream writes in snake_case or dash-case therefore come back exactly; other keys
 * come back in their snake form: acronyms are lower-cased (`userID` → `userId` →
 * `user_id`), and a plural acronym splits as `userIDs` → user|I|Ds. Two input keys may
 * map to the same output key (`first_name` and `firstName`); see inflectKeys for which
 * one wins.
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
      if (i === wordStart) return undefined
      words.push(key.slice(wordStart, i).toLowerCase())
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

/** Whether `word`, written right after the previous one, would be read as part of it. */
function needsSeparator (word: string, previousIsCapitalLetter: boolean): boolean {
  const first = word.charCodeAt(0)
  if (isDigit(first)) return true
  return previousIsCapitalLetter && !(word.length > 1 && isLower(word.charCodeAt(1)))
}

function joinCapitalised (words: string[], capitaliseFirst: boolean): string {
  let out = capitaliseFirst ? capitalise(words[0] as string) : words[0] as string
  let previousIsCapitalLetter = capitaliseFirst && out.length === 1 && isUpper(out.charCodeAt(0))
  for (let i = 1; i < words.length; i++) {
    const word = words[i] as string
    if (needsSeparator(word, previousIsCapitalLetter)) out += '_'
    const written = capitalise(word)
    out += written
    previousIsCapitalLetter = written.length === 1 && isUpper(written.charCodeAt(0))
  }
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
