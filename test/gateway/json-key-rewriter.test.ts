import t from 'tap'
import {
  convertKey,
  InflectionDepthError,
  JsonKeyRewriter,
  JsonSyntaxError,
  KEY_CASES,
  MAX_RENAMED_KEY_BYTES,
  RenameTable,
  type KeyCase,
  type KeyRewriterOptions
} from '../../gateway/inflection/index.js'
import { seededRandom } from '../helpers/seeded-random.js'

/**
 * The rewriter's contract, checked against a reference of our own: the output is the
 * input with member names renamed and every other byte unchanged, whatever the chunking.
 * Bodies are generated from a seed (mulberry32), so a failure names a body to replay.
 */

class Rng {
  readonly next: () => number
  constructor (seed: number) { this.next = seededRandom(seed) }
  int (min: number, max: number): number { return min + Math.floor(this.next() * (max - min + 1)) }
  chance (probability: number): boolean { return this.next() < probability }
  pick<T> (items: readonly T[]): T { return items[this.int(0, items.length - 1)] as T }
}

// ---------------------------------------------------------------------------------------
// A reference tokenizer, independent of the rewriter: it trusts its input to be valid
// JSON (the generator's) and only cuts it into tokens, keeping their bytes.

type TokenKind = 'space' | 'punct' | 'string' | 'name' | 'number' | 'literal'
interface Token { kind: TokenKind, bytes: Buffer }

const isSpace = (b: number): boolean => b === 0x20 || b === 0x09 || b === 0x0a || b === 0x0d

function tokenize (text: Buffer): Token[] {
  const tokens: Token[] = []
  let i = 0
  while (i < text.length) {
    const b = text[i] as number
    let end = i + 1
    let kind: TokenKind
    if (isSpace(b)) {
      while (end < text.length && isSpace(text[end] as number)) end++
      kind = 'space'
    } else if ('{}[]:,'.includes(String.fromCharCode(b))) {
      kind = 'punct'
    } else if (b === 0x22) {
      while (text[end] !== 0x22) end += text[end] === 0x5c ? 2 : 1
      end++
      kind = 'string'
    } else if (b === 0x2d || (b >= 0x30 && b <= 0x39)) {
      while (end < text.length && /[0-9eE+\-.]/.test(String.fromCharCode(text[end] as number))) end++
      kind = 'number'
    } else if (b >= 0x61 && b <= 0x7a) {
      while (end < text.length && (text[end] as number) >= 0x61 && (text[end] as number) <= 0x7a) end++
      kind = 'literal'
    } else {
      throw new Error(`reference tokenizer: unexpected byte ${b} at ${i}`)
    }
    tokens.push({ kind, bytes: text.subarray(i, end) })
    i = end
  }
  // A string is a member name when the next token that is not whitespace is `:`.
  for (let k = 0; k < tokens.length; k++) {
    if (tokens[k]?.kind !== 'string') continue
    let n = k + 1
    while (tokens[n]?.kind === 'space') n++
    const next = tokens[n]
    if (next !== undefined && next.kind === 'punct' && next.bytes[0] === 0x3a) (tokens[k] as Token).kind = 'name'
  }
  return tokens
}

const RENAMABLE = /^[A-Za-z0-9_-]*$/

/** The name a written name (quotes included) must come out as, by the documented rule. */
function expectedName (written: Buffer, style: KeyCase): Buffer {
  const inner = written.subarray(1, written.length - 1)
  const latin1 = inner.toString('latin1')
  if (inner.length > MAX_RENAMED_KEY_BYTES || !RENAMABLE.test(latin1)) return written
  return Buffer.from(`"${convertKey(latin1, style)}"`, 'latin1')
}

/** Differences between `output` and `input` with its names renamed; empty when none. */
function compareTokens (input: Buffer, output: Buffer, style: KeyCase): string[] {
  const want = tokenize(input)
  let got: Token[]
  try {
    got = tokenize(output)
  } catch (err) {
    return [`output does not tokenize: ${(err as Error).message}`]
  }
  const problems: string[] = []
  if (want.length !== got.length) problems.push(`${got.length} tokens, expected ${want.length}`)
  for (let k = 0; k < Math.min(want.length, got.length) && problems.length < 5; k++) {
    const w = want[k] as Token
    const g = got[k] as Token
    if (w.kind !== g.kind) {
      problems.push(`token ${k}: ${g.kind}, expected ${w.kind}`)
      continue
    }
    const expected = w.kind === 'name' ? expectedName(w.bytes, style) : w.bytes
    if (!expected.equals(g.bytes)) problems.push(`token ${k} (${w.kind}): ${g.bytes.toString().slice(0, 80)}, expected ${expected.toString().slice(0, 80)}`)
  }
  return problems
}

// ---------------------------------------------------------------------------------------
// The generator: JSON text plus a model of it, so the parsed output can be compared
// with what the input means, names renamed.

interface GeneratedKey { written: string, decoded: string }

type Model =
  | { kind: 'scalar', text: string }
  | { kind: 'array', items: Model[] }
  | { kind: 'object', members: Array<{ key: GeneratedKey, value: Model }> }

const WORDS = ['user', 'name', 'id', 'address', 'line', 'street', 'x', 'a', 'b', 'v2', '1', '42', 'http', 'api', 'postal', 'code']

const ODD_KEYS = [
  '_id', '__proto__', '_meta_', 'trailing_', '-lead', '--', '_', '', 'a__b', 'a-_b', 'a--b', 'HTTPServer',
  'userIDs', 'userID', 'x_1Y', '42', '0', 'constructor', 'prototype', 'toString', 'hasOwnProperty', '__typename__',
  'ID', '-1', '1_2', 'street_line_1', 'address_line1', 'x_a_b', 'v2_api', '_-x', 'x-_', 'A', 'xAB', 'a'
]

const ESCAPED_KEYS: GeneratedKey[] = [
  { written: 'a\\u005fb', decoded: 'a_b' },
  { written: 'first\\u005Fname', decoded: 'first_name' },
  { written: '\\u0061', decoded: 'a' },
  { written: 'a\\"b', decoded: 'a"b' },
  { written: 'a\\\\b', decoded: 'a\\b' },
  { written: 'back\\\\', decoded: 'back\\' },
  { written: '\\n', decoded: '\n' },
  { written: 'tab\\there', decoded: 'tab\there' },
  { written: '\\/x_y', decoded: '/x_y' },
  { written: '\\u00e9t\\u00e9_key', decoded: 'été_key' },
  { written: '\\ud83d\\ude00_key', decoded: '😀_key' },
  { written: 'user\\u002Dname', decoded: 'user-name' },
  { written: '\\b\\f\\r', decoded: '\b\f\r' }
]

const UNICODE_KEYS = ['日本語_key', 'café_au_lait', 'naïve', '😀_smile', 'ключ_значение', 'é', 'a\u007fb']
const SPACED_KEYS = ['with space', 'a.b', ' lead', 'x y_z', 'trail ', 'a:b', 'a,b', '{x}']

function plainKey (decoded: string): GeneratedKey {
  return { written: JSON.stringify(decoded).slice(1, -1), decoded }
}

function longKey (rng: Rng): GeneratedKey {
  const length = rng.pick([MAX_RENAMED_KEY_BYTES - 1, MAX_RENAMED_KEY_BYTES, MAX_RENAMED_KEY_BYTES + 1, MAX_RENAMED_KEY_BYTES + 7, 3_000])
  const unit = rng.pick(['long_key_', 'longKey', 'Long-Key-'])
  return plainKey(unit.repeat(Math.ceil(length / unit.length)).slice(0, length))
}

function wordsKey (rng: Rng): string {
  const words = Array.from({ length: rng.int(1, 4) }, () => rng.pick(WORDS))
  const capital = (w: string): string => w.charAt(0).toUpperCase() + w.slice(1)
  switch (rng.int(0, 3)) {
    case 0: return words.join('_')
    case 1: return words.join('-')
    case 2: return (words[0] as string) + words.slice(1).map(capital).join('')
    default: return words.map(capital).join('')
  }
}

function generateKey (rng: Rng): GeneratedKey {
  const roll = rng.next()
  if (roll < 0.4) return plainKey(wordsKey(rng))
  if (roll < 0.55) return plainKey(rng.pick(ODD_KEYS))
  if (roll < 0.65) return rng.pick(ESCAPED_KEYS)
  if (roll < 0.72) return plainKey(rng.pick(UNICODE_KEYS))
  if (roll < 0.78) return plainKey(rng.pick(SPACED_KEYS))
  if (roll < 0.8) return longKey(rng)
  let key = ''
  for (let i = rng.int(0, 10); i > 0; i--) key += rng.pick(['a', 'b', 'X', 'Y', '0', '1', '_', '-'])
  return plainKey(key)
}

const STRING_VALUES = [
  '"plain"', '"snake_case_value"', '"a_b\\":1"', '"\\"quoted_key\\": 2"', '"\\\\"', '"\\/"', '"\\b\\f\\n\\r\\t"',
  '"\\u0000\\u001f\\u00e9\\uD83D\\uDE00"', '"日本語"', '"😀"', '"{\\"inner_key\\":1}"', '"with, comma: and } brace ] ["',
  '""', '"\\ud800"', '"del\u007f"', '"first_name"', '"  spaced  "', '"é\\u00e9"', '"\\\\\\""'
]

function generateNumber (rng: Rng): string {
  let text = rng.chance(0.3) ? '-' : ''
  if (rng.chance(0.25)) text += '0'
  else {
    text += String(rng.int(1, 9))
    for (let i = rng.int(0, rng.chance(0.2) ? 30 : 4); i > 0; i--) text += String(rng.int(0, 9))
  }
  if (rng.chance(0.35)) {
    text += '.'
    for (let i = rng.int(1, 6); i > 0; i--) text += String(rng.int(0, 9))
  }
  if (rng.chance(0.3)) {
    text += rng.pick(['e', 'E']) + rng.pick(['', '+', '-'])
    for (let i = rng.int(1, 3); i > 0; i--) text += String(rng.int(0, 9))
  }
  return text
}

function space (rng: Rng): string {
  if (rng.chance(0.6)) return ''
  let out = ''
  for (let i = rng.int(1, 3); i > 0; i--) out += rng.pick([' ', '\t', '\n', '\r'])
  return out
}

/** The decoded name a key must have after parsing the output, by the documented rule. */
function expectedDecodedName (key: GeneratedKey, style: KeyCase): string {
  if (key.written.includes('\\') || Buffer.byteLength(key.written) > MAX_RENAMED_KEY_BYTES || !RENAMABLE.test(key.written)) return key.decoded
  return convertKey(key.decoded, style)
}

interface Generated { text: string, model: Model, duplicates: boolean }

function generateBody (seed: number): Generated {
  const rng = new Rng(seed)
  // One body in ten may hold two members of one object that share a name (before or
  // after renaming): the bytes must still follow the rule; only the parse check is skipped.
  const allowDuplicates = rng.chance(0.1)
  let duplicates = false
  const value = (depth: number): { text: string, model: Model } => {
    const kind = depth >= 4 ? 0 : rng.int(0, depth === 0 ? 2 : 3)
    if (kind === 0 || kind === 3) {
      const roll = rng.next()
      const text = roll < 0.4 ? generateNumber(rng) : roll < 0.8 ? rng.pick(STRING_VALUES) : rng.pick(['true', 'false', 'null'])
      return { text, model: { kind: 'scalar', text } }
    }
    const count = rng.int(0, 6)
    if (kind === 1) {
      const items: Model[] = []
      const parts: string[] = []
      for (let i = 0; i < count; i++) {
        const item = value(depth + 1)
        items.push(item.model)
        parts.push(space(rng) + item.text + space(rng))
      }
      return { text: `[${parts.join(',') || space(rng)}]`, model: { kind: 'array', items } }
    }
    const members: Array<{ key: GeneratedKey, value: Model }> = []
    const parts: string[] = []
    const taken = KEY_CASES.map(() => new Set<string>())
    const takenDecoded = new Set<string>()
    for (let i = 0; i < count; i++) {
      const earlier = members.length > 0 && allowDuplicates && rng.chance(0.4) ? rng.pick(members).key : undefined
      // A repeat: the same name again, or another spelling of it (`first_name`, `firstName`).
      const key = earlier === undefined ? generateKey(rng) : rng.chance(0.5) ? earlier : plainKey(convertKey(earlier.decoded, rng.pick(KEY_CASES)))
      const clash = takenDecoded.has(key.decoded) || KEY_CASES.some((style, s) => taken[s]?.has(expectedDecodedName(key, style)))
      if (clash && !allowDuplicates) continue
      if (clash) duplicates = true
      takenDecoded.add(key.decoded)
      KEY_CASES.forEach((style, s) => taken[s]?.add(expectedDecodedName(key, style)))
      const member = value(depth + 1)
      members.push({ key, value: member.model })
      parts.push(`${space(rng)}"${key.written}"${space(rng)}:${space(rng)}${member.text}${space(rng)}`)
    }
    return { text: `{${parts.join(',') || space(rng)}}`, model: { kind: 'object', members } }
  }
  const top = value(0)
  return { text: space(rng) + top.text + space(rng), model: top.model, duplicates }
}

/** What the model parses to with names as `nameOf` says; `__proto__` made an own member, as JSON.parse does. */
function modelValue (model: Model, nameOf: (key: GeneratedKey) => string): unknown {
  if (model.kind === 'scalar') return JSON.parse(model.text)
  if (model.kind === 'array') return model.items.map((item) => modelValue(item, nameOf))
  const out: Record<string, unknown> = {}
  for (const { key, value } of model.members) {
    Object.defineProperty(out, nameOf(key), { value: modelValue(value, nameOf), enumerable: true, configurable: true, writable: true })
  }
  return out
}

function deepEqual (a: unknown, b: unknown): boolean {
  if (typeof a !== 'object' || a === null || typeof b !== 'object' || b === null) return Object.is(a, b)
  if (Array.isArray(a) !== Array.isArray(b)) return false
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((item, i) => deepEqual(item, b[i]))
  const aKeys = Object.keys(a)
  const bKeys = Object.keys(b)
  if (aKeys.length !== bKeys.length) return false
  return aKeys.every((key) => Object.hasOwn(b, key) &&
    deepEqual(Object.getOwnPropertyDescriptor(a, key)?.value, Object.getOwnPropertyDescriptor(b, key)?.value))
}

// ---------------------------------------------------------------------------------------

function rulesTable (style: KeyCase, maxEntries?: number): RenameTable {
  return new RenameTable((key) => convertKey(key, style), maxEntries === undefined ? {} : { maxEntries })
}

function randomChunks (text: Buffer, rng: Rng, oneByte: boolean): Buffer[] {
  const chunks: Buffer[] = []
  let at = 0
  while (at < text.length) {
    const size = oneByte ? 1 : rng.chance(0.3) ? 1 : rng.int(1, 40)
    chunks.push(text.subarray(at, at + size))
    at += size
  }
  return chunks
}

function rewriteChunks (chunks: Buffer[], table: RenameTable, options: KeyRewriterOptions = {}): Buffer {
  const rewriter = new JsonKeyRewriter(table, options)
  const out = chunks.map((chunk) => Buffer.from(rewriter.push(chunk)))
  rewriter.end()
  return Buffer.concat(out)
}

const BODIES = 3_000

t.test('property: only member names change, as the rules say, in every style and chunking', async (t) => {
  const shared = new Map(KEY_CASES.map((style) => [style, rulesTable(style)]))
  const small = new Map(KEY_CASES.map((style) => [style, rulesTable(style, 8)]))
  const failures: string[] = []
  const seen = { escapes: 0, long: 0, renamed: 0, unchanged: 0, duplicates: 0, oneByte: 0 }
  for (let id = 1; id <= BODIES && failures.length < 20; id++) {
    const body = generateBody(id)
    const input = Buffer.from(body.text, 'utf8')
    if (body.text.includes('\\u005f')) seen.escapes++
    if (input.length > MAX_RENAMED_KEY_BYTES) seen.long++
    if (body.duplicates) seen.duplicates++
    const inputValue = body.duplicates ? undefined : JSON.parse(body.text) as unknown
    if (inputValue !== undefined && !deepEqual(inputValue, modelValue(body.model, (key) => key.decoded))) {
      failures.push(`body ${id}: the generator's model does not match its text`)
    }
    const rng = new Rng(id * 7919)
    const oneByte = id % 5 === 0
    if (oneByte) seen.oneByte++
    for (const style of KEY_CASES) {
      const whole = new JsonKeyRewriter(shared.get(style) as RenameTable).rewriteAll(input)
      const where = `body ${id} → ${style}`
      for (const problem of compareTokens(input, whole, style)) failures.push(`${where}: ${problem}`)
      if (whole.equals(input)) seen.unchanged++
      else seen.renamed++
      const chunked = rewriteChunks(randomChunks(input, rng, oneByte), (id % 2 === 0 ? small : shared).get(style) as RenameTable)
      if (!chunked.equals(whole)) failures.push(`${where}: chunked output differs from the whole (${chunked.length} vs ${whole.length} bytes)`)
      if (inputValue !== undefined) {
        let parsed: unknown
        try {
          parsed = JSON.parse(whole.toString('utf8'))
        } catch (err) {
          failures.push(`${where}: output is not JSON: ${(err as Error).message}`)
          continue
        }
        if (!deepEqual(parsed, modelValue(body.model, (key) => expectedDecodedName(key, style)))) failures.push(`${where}: parsed output differs from the input, names renamed`)
      }
    }
  }
  t.same(failures, [], 'no body broke the rule')
  t.ok(seen.escapes > 50 && seen.long > 50 && seen.duplicates > 50 && seen.oneByte > 100, `the generator reached the edges: ${JSON.stringify(seen)}`)
  t.ok(seen.renamed > 1_000 && seen.unchanged > 100, 'bodies that change and bodies that do not')
})

t.test('property: the reference agrees with hand-written expectations', async (t) => {
  // The reference must not share a mistake with the rewriter: spot-check it by hand.
  const input = Buffer.from(' { "a_b" : "c_d", "a\\u005fb":[1,{"x_y":true}], "é_x":null, "streetLine1":-0.5e+3 } ')
  const cases: Array<[KeyCase, string]> = [
    ['camel', ' { "aB" : "c_d", "a\\u005fb":[1,{"xY":true}], "é_x":null, "streetLine1":-0.5e+3 } '],
    ['snake', ' { "a_b" : "c_d", "a\\u005fb":[1,{"x_y":true}], "é_x":null, "street_line1":-0.5e+3 } '],
    ['pascal', ' { "AB" : "c_d", "a\\u005fb":[1,{"XY":true}], "é_x":null, "StreetLine1":-0.5e+3 } '],
    ['dash', ' { "a-b" : "c_d", "a\\u005fb":[1,{"x-y":true}], "é_x":null, "street-line1":-0.5e+3 } ']
  ]
  for (const [style, expected] of cases) {
    t.same(compareTokens(input, Buffer.from(expected), style), [], `reference accepts the right ${style} output`)
    t.equal(new JsonKeyRewriter(rulesTable(style)).rewriteAll(input).toString(), expected, `rewriter → ${style}`)
  }
  t.not(compareTokens(input, Buffer.from(' { "aB" : "cD", "a\\u005fb":[1,{"xY":true}], "é_x":null, "streetLine1":-0.5e+3 } '), 'camel').length, 0, 'a renamed value is caught')
  t.not(compareTokens(input, Buffer.from(' { "aB" : "c_d", "a_b":[1,{"xY":true}], "é_x":null, "streetLine1":-0.5e+3 } '), 'camel').length, 0, 'an escaped name renamed is caught')
  t.not(compareTokens(input, Buffer.from(' { "aB" : "c_d", "a\\u005fb":[1,{"xY":true}], "é_x":null, "streetLine1":-500 } '), 'camel').length, 0, 'a rewritten number is caught')
  t.not(compareTokens(input, Buffer.from('{ "aB" : "c_d", "a\\u005fb":[1,{"xY":true}], "é_x":null, "streetLine1":-0.5e+3 } '), 'camel').length, 0, 'lost whitespace is caught')
})

t.test('long names: renamed up to MAX_RENAMED_KEY_BYTES bytes, passed as written beyond, whatever the chunking', async (t) => {
  const atLimit = 'a_b'.repeat(Math.ceil(MAX_RENAMED_KEY_BYTES / 3)).slice(0, MAX_RENAMED_KEY_BYTES)
  const overLimit = `${atLimit}b`
  t.equal(Buffer.byteLength(atLimit), MAX_RENAMED_KEY_BYTES)
  for (const chunkSize of [1, 7, 1000, 1025, 100_000]) {
    for (const [key, renamed] of [[atLimit, convertKey(atLimit, 'camel')], [overLimit, overLimit]] as const) {
      const text = Buffer.from(`{"x_y":1,"${key}":{"a_b":2}}`)
      const chunks: Buffer[] = []
      for (let at = 0; at < text.length; at += chunkSize) chunks.push(text.subarray(at, at + chunkSize))
      t.equal(rewriteChunks(chunks, rulesTable('camel')).toString(), `{"xY":1,"${renamed}":{"aB":2}}`, `${key.length} bytes, chunks of ${chunkSize}`)
    }
  }
  t.not(convertKey(atLimit, 'camel'), atLimit, 'the name at the limit is one the rules change')
})

t.test('a chunk with no renamed name comes back as it was, and an empty chunk is harmless', async (t) => {
  const rewriter = new JsonKeyRewriter(rulesTable('camel'))
  const first = Buffer.from('{"id":1,"list":[')
  t.equal(rewriter.push(first), first, 'the same buffer')
  t.equal(rewriter.push(Buffer.alloc(0)).length, 0)
  t.equal(rewriter.push(Buffer.from('{"a_b":2}]}')).toString(), '{"aB":2}]}')
  t.doesNotThrow(() => { rewriter.end() })
})

// ---------------------------------------------------------------------------------------
// Validation: the grammar of RFC 8259, in every chunking.

function chunkings (text: Buffer, seed: number): Array<[string, Buffer[]]> {
  const rng = new Rng(seed)
  const out: Array<[string, Buffer[]]> = [['whole', [text]], ['1-byte chunks', randomChunks(text, rng, true)]]
  for (let i = 0; i < 3; i++) out.push([`random chunks ${i}`, randomChunks(text, rng, false)])
  out.push(['with empty chunks', [Buffer.alloc(0), ...randomChunks(text, rng, false).flatMap((c) => [c, Buffer.alloc(0)])]])
  return out
}

const INVALID: Array<[string, string]> = [
  ['trailing comma in an array', '[1,]'],
  ['trailing comma in an object', '{"a":1,}'],
  ['trailing comma, nested', '{"a":[1,{"b":2,}]}'],
  ['leading comma', '[,1]'],
  ['lone comma in an object', '{,}'],
  ['double comma', '[1,,2]'],
  ['leading zero', '01'],
  ['leading zero, negative', '-01'],
  ['double zero', '00'],
  ['leading zero in an array', '[007]'],
  ['dot with no fraction', '1.'],
  ['dot with no fraction, then exponent', '1.e5'],
  ['fraction with no integer', '.5'],
  ['fraction with no integer in an array', '[.5]'],
  ['plus sign', '+1'],
  ['lone minus', '-'],
  ['minus then space', '- 1'],
  ['double minus', '--1'],
  ['exponent with no digits', '1e'],
  ['exponent sign with no digits', '1e+'],
  ['exponent sign with no digits, in an array', '[1E-]'],
  ['hex number', '0x10'],
  ['digit separator', '1_000'],
  ['NaN', 'NaN'],
  ['Infinity', 'Infinity'],
  ['-Infinity', '-Infinity'],
  ['bare word', 'abc'],
  ['undefined', 'undefined'],
  ['capital True', 'True'],
  ['truncated true', 'tru'],
  ['truncated null in an array', '[nul]'],
  ['true with a tail', 'truex'],
  ['nulls', 'nulls'],
  ['unquoted name', '{a:1}'],
  ['single-quoted name', "{'a':1}"],
  ['single-quoted string', "'a'"],
  ['number as a name', '{1:2}'],
  ['unterminated string', '"abc'],
  ['unterminated name', '{"abc'],
  ['unterminated name at the quote', '{"'],
  ['unterminated array', '[1'],
  ['unterminated array after comma', '[1,'],
  ['unterminated object', '{"a":1'],
  ['unterminated object after name', '{"a"'],
  ['unterminated object after colon', '{"a":'],
  ['unterminated nested', '[{"a":[1,2]}'],
  ['lone open brace', '{'],
  ['lone open bracket', '['],
  ['lone close bracket', ']'],
  ['lone close brace', '}'],
  ['mismatched close', '[}'],
  ['mismatched close, object', '{]'],
  ['mismatched close, nested', '{"a":[1}]'],
  ['missing colon', '{"a" 1}'],
  ['double colon', '{"a"::1}'],
  ['missing value', '{"a":}'],
  ['missing comma in an array', '[1 2]'],
  ['missing comma in an object', '{"a":1 "b":2}'],
  ['colon in an array', '[1:2]'],
  ['comma instead of colon', '{"a",1}'],
  ['raw tab in a string', '"a\tb"'],
  ['raw newline in a string', '"a\nb"'],
  ['raw NUL in a string', '"a\u0000b"'],
  ['raw 0x1f in a string', '["\u001f"]'],
  ['raw control character in a name', '{"a\u0001b":1}'],
  ['raw newline in a renamable name', '{"a_b\n":1}'],
  ['bad escape \\x', '"\\x41"'],
  ['bad escape \\a', '"\\a"'],
  ['bad escape \\\'', '"\\\'"'],
  ['bad escape \\0', '"\\0"'],
  ['bad escape \\U', '"\\U0041"'],
  ['bad escape in a name', '{"a\\q":1}'],
  ['bad hex digit', '"\\u12G4"'],
  ['bad hex digit in a name', '{"a\\u00g1":1}'],
  ['short unicode escape', '"\\u12"'],
  ['empty unicode escape', '"\\u"'],
  ['escape at the end', '"\\'],
  ['two top-level values', '1 2'],
  ['two top-level objects', '{}{}'],
  ['two top-level arrays', '[] []'],
  ['two top-level strings', '"a""b"'],
  ['value after a number', '1"a"'],
  ['literal after a literal', 'true false'],
  ['empty input', ''],
  ['whitespace only', ' \n\t\r '],
  ['byte order mark', '\uFEFF{}'],
  ['byte order mark before a number', '\uFEFF1'],
  ['non-JSON whitespace (NBSP)', '[1,\u00a02]'],
  ['form feed as whitespace', '[1,\f2]'],
  ['vertical tab as whitespace', '\u000b1'],
  ['block comment', '/*x*/1'],
  ['line comment', '1 // x'],
  ['escaped quote closes nothing', '{"a\\":1}'],
  ['object as a name', '{{}:1}']
]

t.test('validation: invalid JSON is refused with JsonSyntaxError, whatever the chunking', async (t) => {
  let id = 0
  for (const [name, source] of INVALID) {
    t.throws(() => JSON.parse(source), SyntaxError, `${name}: JSON.parse agrees it is not JSON`)
    const text = Buffer.from(source, 'utf8')
    for (const [how, chunks] of chunkings(text, ++id)) {
      for (const style of KEY_CASES) {
        let error: unknown
        try {
          rewriteChunks(chunks, rulesTable(style))
        } catch (err) {
          error = err
        }
        if (!(error instanceof JsonSyntaxError)) {
          t.fail(`${name} (${JSON.stringify(source)}), ${how}, ${style}: ${error === undefined ? 'accepted' : String(error)}`)
          continue
        }
        if (error.offset < 0 || error.offset > text.length) t.fail(`${name}: offset ${error.offset} outside the text`)
      }
    }
    t.pass(name)
  }
})

t.test('validation: the error says where the text broke', async (t) => {
  const cases: Array<[string, number]> = [['[1,]', 3], ['01', 1], ['{"a" 1}', 5], ['"a\u0001"', 2], ['1 2', 2], ['[1', 2], ['', 0], ['"\\u12G4"', 5]]
  for (const [source, offset] of cases) {
    for (const [how, chunks] of chunkings(Buffer.from(source), offset + 100)) {
      t.throws(() => rewriteChunks(chunks, rulesTable('camel')), { name: 'JsonSyntaxError', offset }, `${JSON.stringify(source)}, ${how}: byte ${offset}`)
    }
  }
})

const VALID: string[] = [
  '0', '-0', '1', '"x"', '""', 'true', 'false', 'null', '[]', '{}', ' [ ] ', '\n{\r\n}\t', '{"":0}', '[[]]', '[{}]',
  '"\\u0000"', '"\\ud800"', '"\\uDFFF\\uD800"', '"\u007f"', '"\u00e9\u{1F600}"', '"\\"\\\\\\/\\b\\f\\n\\r\\t\\u00Af"', ' 42 ',
  '12345678901234567891', '-1.5E-3', '[1,-2,3.0,4e4]', '{"a":{"b":{"c":[]}}}', '{"a_b":1,"a_b":2}', '[true,false,null]',
  '{"__proto__":{"a_b":1}}', '{"\u00e9":"\u00e9"}', '{"a b":"c"}', '["a_b"]', '"first_name"', '[ 1 , 2 ]', '{ "a" : 1 }'
]

t.test('validation: valid edge texts are accepted and come out as the rules say', async (t) => {
  let id = 0
  for (const source of VALID) {
    t.doesNotThrow(() => JSON.parse(source), `${JSON.stringify(source)} is JSON`)
    const text = Buffer.from(source, 'utf8')
    for (const style of KEY_CASES) {
      const whole = new JsonKeyRewriter(rulesTable(style)).rewriteAll(text)
      t.same(compareTokens(text, whole, style), [], `${JSON.stringify(source)} → ${style}`)
      for (const [how, chunks] of chunkings(text, ++id)) {
        t.ok(rewriteChunks(chunks, rulesTable(style)).equals(whole), `${JSON.stringify(source)} → ${style}, ${how}`)
      }
    }
  }
})

function nestedText (depth: number, seed: number): string {
  const rng = new Rng(seed)
  let open = ''
  let close = ''
  for (let i = 0; i < depth; i++) {
    if (rng.chance(0.5)) {
      open += '{"child_node":'
      close = `}${close}`
    } else {
      open += '['
      close = `]${close}`
    }
  }
  return `${open}1${close}`
}

t.test('depth: exactly maxDepth is accepted, one more throws InflectionDepthError, whatever the chunking', async (t) => {
  for (const maxDepth of [1, 2, 3, 17, 64]) {
    for (let seed = 1; seed <= 5; seed++) {
      const fits = Buffer.from(nestedText(maxDepth, seed))
      const tooDeep = Buffer.from(nestedText(maxDepth + 1, seed))
      for (const [how, chunks] of chunkings(fits, seed)) {
        const out = rewriteChunks(chunks, rulesTable('camel'), { maxDepth })
        t.equal(out.toString(), fits.toString().replaceAll('child_node', 'childNode'), `depth ${maxDepth} of ${maxDepth}, ${how}`)
      }
      for (const [how, chunks] of chunkings(tooDeep, seed)) {
        t.throws(() => rewriteChunks(chunks, rulesTable('camel'), { maxDepth }), InflectionDepthError, `depth ${maxDepth + 1} of ${maxDepth}, ${how}`)
      }
    }
  }
  t.throws(() => rewriteChunks([Buffer.from('[[]]')], rulesTable('camel'), { maxDepth: 1 }), { name: 'InflectionDepthError', code: 'inflection_depth_exceeded', maxDepth: 1 })
  t.throws(() => rewriteChunks([Buffer.from('[{}]')], rulesTable('camel'), { maxDepth: 1 }), InflectionDepthError, 'an empty object counts as a level')
  t.doesNotThrow(() => rewriteChunks([Buffer.from('[[],[],{"a":[]}]')], rulesTable('camel'), { maxDepth: 3 }), 'siblings do not add up')
  t.doesNotThrow(() => rewriteChunks([Buffer.from('"[[[[" ')], rulesTable('camel'), { maxDepth: 1 }), 'brackets in strings are not nesting')
  t.doesNotThrow(() => rewriteChunks([Buffer.from('1')], rulesTable('camel'), { maxDepth: 1 }), 'a scalar has no depth')
})
