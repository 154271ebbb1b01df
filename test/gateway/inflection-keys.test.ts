import t from 'tap'
import { EDGE_KEYS_JSON } from '../../upstream-mock/edge-bodies.js'
import { pageMeta } from '../../upstream-mock/resource-routes.js'
import { seedMeeting, seedTask, seedUser } from '../../upstream-mock/seed.js'
import {
  ALLOWED_INFLECTION_VALUES,
  DEFAULT_RENAME_TABLE_ENTRIES,
  KEY_CASES,
  RenameTable,
  convertKey,
  isKeyCase,
  parseInflectionHeader,
  splitKey,
  type KeyCase
} from '../../gateway/inflection/index.js'
import { KEY_HASH_SEED, hashStep } from '../../gateway/inflection/rename-table.js'
import { seededRandom } from '../helpers/seeded-random.js'

/** Key → [snake, camel, dash, pascal]. */
const TABLE: Array<[string, [string, string, string, string]]> = [
  ['first_name', ['first_name', 'firstName', 'first-name', 'FirstName']],
  ['home_address', ['home_address', 'homeAddress', 'home-address', 'HomeAddress']],
  ['postal_code', ['postal_code', 'postalCode', 'postal-code', 'PostalCode']],
  ['last_login_at', ['last_login_at', 'lastLoginAt', 'last-login-at', 'LastLoginAt']],
  // camel and pascal keep no inner separator: a digit word joins the word before it.
  ['address_line_1', ['address_line_1', 'addressLine1', 'address-line-1', 'AddressLine1']],
  ['street_line_1', ['street_line_1', 'streetLine1', 'street-line-1', 'StreetLine1']],
  ['address_line1', ['address_line1', 'addressLine1', 'address-line1', 'AddressLine1']],
  ['x_1_y', ['x_1_y', 'x1Y', 'x-1-y', 'X1Y']],
  ['x_1Y', ['x_1_y', 'x1Y', 'x-1-y', 'X1Y']],
  ['1_2', ['1_2', '12', '1-2', '12']],
  ['line-2-b', ['line_2_b', 'line2B', 'line-2-b', 'Line2B']],
  // …and one-letter words run together.
  ['a_b', ['a_b', 'aB', 'a-b', 'AB']],
  ['x_a_b', ['x_a_b', 'xAB', 'x-a-b', 'XAB']],
  ['xAB', ['x_ab', 'xAb', 'x-ab', 'XAb']],
  ['is_a_number', ['is_a_number', 'isANumber', 'is-a-number', 'IsANumber']],
  ['point_x_y2', ['point_x_y2', 'pointXY2', 'point-x-y2', 'PointXY2']],
  // A run of separators inside a key is one boundary.
  ['a__b', ['a_b', 'aB', 'a-b', 'AB']],
  ['a-_b', ['a_b', 'aB', 'a-b', 'AB']],
  ['a--b', ['a_b', 'aB', 'a-b', 'AB']],
  ['user__first--name', ['user_first_name', 'userFirstName', 'user-first-name', 'UserFirstName']],
  ['a_-_b_', ['a_b_', 'aB_', 'a-b_', 'AB_']],
  ['__a__b', ['__a_b', '__aB', '__a-b', '__AB']],
  // A leading or a trailing run is kept as written.
  ['_id', ['_id', '_id', '_id', '_Id']],
  ['_a', ['_a', '_a', '_a', '_A']],
  ['a_', ['a_', 'a_', 'a_', 'A_']],
  ['trailing_', ['trailing_', 'trailing_', 'trailing_', 'Trailing_']],
  ['-leading-dash', ['-leading_dash', '-leadingDash', '-leading-dash', '-LeadingDash']],
  ['__typename', ['__typename', '__typename', '__typename', '__Typename']],
  ['-1', ['-1', '-1', '-1', '-1']],
  // Both a leading and a trailing run: a reserved name, unchanged.
  ['__proto__', ['__proto__', '__proto__', '__proto__', '__proto__']],
  ['_meta_', ['_meta_', '_meta_', '_meta_', '_meta_']],
  ['__typename__', ['__typename__', '__typename__', '__typename__', '__typename__']],
  ['-x_y-', ['-x_y-', '-x_y-', '-x_y-', '-x_y-']],
  // Separators only, empty, and characters outside [A-Za-z0-9_-]: unchanged.
  ['_', ['_', '_', '_', '_']],
  ['--', ['--', '--', '--', '--']],
  ['_-_', ['_-_', '_-_', '_-_', '_-_']],
  ['', ['', '', '', '']],
  ['with space', ['with space', 'with space', 'with space', 'with space']],
  ['with_space ', ['with_space ', 'with_space ', 'with_space ', 'with_space ']],
  ['a.b', ['a.b', 'a.b', 'a.b', 'a.b']],
  ['a$b_c', ['a$b_c', 'a$b_c', 'a$b_c', 'a$b_c']],
  ['日本語', ['日本語', '日本語', '日本語', '日本語']],
  ['café_au_lait', ['café_au_lait', 'café_au_lait', 'café_au_lait', 'café_au_lait']],
  ['ß_x', ['ß_x', 'ß_x', 'ß_x', 'ß_x']],
  // Case changes and acronyms.
  ['firstName', ['first_name', 'firstName', 'first-name', 'FirstName']],
  ['FirstName', ['first_name', 'firstName', 'first-name', 'FirstName']],
  ['addressLine_1', ['address_line_1', 'addressLine1', 'address-line-1', 'AddressLine1']],
  ['addressLine1', ['address_line1', 'addressLine1', 'address-line1', 'AddressLine1']],
  ['HTTPServer', ['http_server', 'httpServer', 'http-server', 'HttpServer']],
  ['XMLHttpRequest', ['xml_http_request', 'xmlHttpRequest', 'xml-http-request', 'XmlHttpRequest']],
  ['userID', ['user_id', 'userId', 'user-id', 'UserId']],
  ['user_ID', ['user_id', 'userId', 'user-id', 'UserId']],
  ['userIDs', ['user_i_ds', 'userIDs', 'user-i-ds', 'UserIDs']],
  ['ID', ['id', 'id', 'id', 'Id']],
  ['A', ['a', 'a', 'a', 'A']],
  ['ABC', ['abc', 'abc', 'abc', 'Abc']],
  ['a', ['a', 'a', 'a', 'A']],
  ['helloWorld_foo-bar', ['hello_world_foo_bar', 'helloWorldFooBar', 'hello-world-foo-bar', 'HelloWorldFooBar']],
  ['hasOwnProperty', ['has_own_property', 'hasOwnProperty', 'has-own-property', 'HasOwnProperty']],
  ['already-dashed', ['already_dashed', 'alreadyDashed', 'already-dashed', 'AlreadyDashed']],
  ['constructor', ['constructor', 'constructor', 'constructor', 'Constructor']],
  ['prototype', ['prototype', 'prototype', 'prototype', 'Prototype']],
  // Digits.
  ['v2_api', ['v2_api', 'v2Api', 'v2-api', 'V2Api']],
  ['v2Api', ['v2_api', 'v2Api', 'v2-api', 'V2Api']],
  ['1st_place', ['1st_place', '1stPlace', '1st-place', '1stPlace']],
  ['42', ['42', '42', '42', '42']],
  ['line1', ['line1', 'line1', 'line1', 'Line1']]
]
const STYLES: KeyCase[] = ['snake', 'camel', 'dash', 'pascal']

function collectKeys (value: unknown, into: Set<string>): Set<string> {
  if (Array.isArray(value)) for (const item of value) collectKeys(item, into)
  else if (typeof value === 'object' && value !== null) {
    for (const [key, member] of Object.entries(value)) {
      into.add(key)
      collectKeys(member, into)
    }
  }
  return into
}

/** Every member name of the records, pages and edge bodies the upstream mock serves. */
function upstreamMockKeys (): string[] {
  const keys = new Set<string>()
  for (let id = 1; id <= 200; id++) {
    collectKeys([seedUser(1, id), seedTask(1, id, 200), seedMeeting(1, id, 200)], keys)
  }
  collectKeys(pageMeta(1, 50, 200), keys)
  collectKeys(JSON.parse(EDGE_KEYS_JSON), keys)
  return [...keys]
}
const UPSTREAM_KEYS = upstreamMockKeys()
const SNAKE_KEY = /^_*[a-z0-9]+(_[a-z0-9]+)*_*$/

function pick (next: () => number, alphabet: string): string {
  return alphabet[Math.floor(next() * alphabet.length)] as string
}

/**
 * Canonical separator-case keys: words of [a-z0-9] joined by one separator, optional
 * prefix or suffix; one-letter words and digit words are frequent on purpose.
 */
function canonicalKeys (separator: '_' | '-', count: number, seed: number): string[] {
  const next = seededRandom(seed)
  const keys: string[] = []
  for (let k = 0; k < count; k++) {
    const words: string[] = []
    const wordCount = 1 + Math.floor(next() * 5)
    for (let w = 0; w < wordCount; w++) {
      let word = ''
      const length = 1 + Math.floor(next() * 4)
      for (let c = 0; c < length; c++) word += pick(next, next() < 0.75 ? 'abcdefghijklmnopqrstuvwxyz' : '0123456789')
      words.push(word)
    }
    const edge = next()
    const prefix = edge < 0.15 ? separator.repeat(1 + Math.floor(next() * 2)) : ''
    const suffix = edge > 0.9 ? separator : ''
    keys.push(prefix + words.join(separator) + suffix)
  }
  return keys
}

/** Arbitrary keys over the characters the splitter cares about. */
function arbitraryKeys (count: number, seed: number): string[] {
  const next = seededRandom(seed)
  const keys: string[] = []
  for (let k = 0; k < count; k++) {
    let key = ''
    const length = Math.floor(next() * 12)
    for (let c = 0; c < length; c++) key += pick(next, 'abcXYZ019_-')
    keys.push(key)
  }
  return keys
}

const isLetter = (c: string | undefined): boolean => c !== undefined && c >= 'a' && c <= 'z'

/**
 * Whether lower-case `words`, written in camel (or pascal: `capitaliseFirst`), split
 * again into the same words. Worked out from the rules, not by splitting: a word after
 * the first must start with a letter (a digit continues the word before it), and a word
 * after a capitalised one-letter word must have a lower-case letter second (else the two
 * read as one upper-case run: `xAB` is x|ab).
 */
function wordsSurviveCapitals (words: string[], capitaliseFirst: boolean): boolean {
  for (let i = 1; i < words.length; i++) {
    const word = words[i] as string
    if (!isLetter(word[0])) return false
    const previous = words[i - 1] as string
    const previousIsCapitalLetter = previous.length === 1 && isLetter(previous) && (i - 1 > 0 || capitaliseFirst)
    if (previousIsCapitalLetter && !(word.length > 1 && isLetter(word[1]))) return false
  }
  return true
}

/** Whether converting `key` to `style` keeps its words (always, for snake and dash). */
function survives (key: string, style: KeyCase): boolean {
  const split = splitKey(key)
  if (split === undefined || style === 'snake' || style === 'dash') return true
  return wordsSurviveCapitals(split.words, style === 'pascal')
}

t.test('happy: each key in each style', async (t) => {
  for (const [key, expected] of TABLE) {
    STYLES.forEach((style, i) => {
      t.equal(convertKey(key, style), expected[i], `${JSON.stringify(key)} → ${style}`)
    })
  }
})

t.test('splitKey: prefix, words and suffix; undefined for the keys left unchanged', async (t) => {
  t.same(splitKey('__user_IDs'), { prefix: '__', words: ['user', 'i', 'ds'], suffix: '' })
  t.same(splitKey('x1Y_-'), { prefix: '', words: ['x1', 'y'], suffix: '_-' })
  t.same(splitKey('a__b'), { prefix: '', words: ['a', 'b'], suffix: '' })
  t.same(splitKey('HTTPServer'), { prefix: '', words: ['http', 'server'], suffix: '' })
  for (const key of ['', '_', '-_-', '__proto__', '_a_', 'a b', 'a.b', 'é']) t.equal(splitKey(key), undefined, JSON.stringify(key))
})

t.test('happy: snake → snake or dash → snake is the identity for snake keys; via camel or pascal, exactly when the words survive', async (t) => {
  const snakeKeys = [...TABLE.map(([key]) => key), ...UPSTREAM_KEYS, ...canonicalKeys('_', 5_000, 1)].filter((key) => SNAKE_KEY.test(key))
  t.ok(snakeKeys.includes('address_line_1') && snakeKeys.includes('x_a_b') && snakeKeys.includes('_id'))
  t.ok(UPSTREAM_KEYS.length > 30, `the mock's ${UPSTREAM_KEYS.length} keys are all collected`)
  const failures: string[] = []
  const lost = { camel: 0, pascal: 0 }
  for (const key of snakeKeys) {
    for (const style of STYLES) {
      const back = convertKey(convertKey(key, style), 'snake')
      const kept = survives(key, style)
      if (kept !== (back === key)) failures.push(`${key} via ${style} → ${back} (words ${kept ? 'survive' : 'do not survive'})`)
      if (!kept && (style === 'camel' || style === 'pascal')) lost[style]++
    }
  }
  t.same(failures, [], 'the key comes back exactly when its words survive')
  t.ok(lost.camel > 500 && lost.pascal > lost.camel, `the generated keys include lossy ones: ${JSON.stringify(lost)}`)
  // The documented cases: the rules alone cannot bring these back (KeySpellings does).
  t.equal(convertKey(convertKey('address_line_1', 'camel'), 'snake'), 'address_line1')
  t.equal(convertKey(convertKey('x_a_b', 'camel'), 'snake'), 'x_ab')
  t.equal(convertKey(convertKey('a_b', 'pascal'), 'snake'), 'ab', 'pascal loses a leading one-letter word too')
  t.equal(convertKey(convertKey('a_b', 'camel'), 'snake'), 'a_b', 'camel does not')
})

t.test('happy: dash keys come back the same way', async (t) => {
  const failures: string[] = []
  for (const key of canonicalKeys('-', 5_000, 2)) {
    for (const style of STYLES) {
      const back = convertKey(convertKey(key, style), 'dash')
      if (survives(key, style) !== (back === key)) failures.push(`${key} via ${style} → ${back}`)
    }
  }
  t.same(failures, [], 'no dash key behaved other than its words say')
})

t.test('happy: converting to one style and then another equals converting straight to the second, where the words survive', async (t) => {
  const failures: string[] = []
  const keys = [...TABLE.map(([key]) => key), ...UPSTREAM_KEYS, ...canonicalKeys('_', 2_000, 5), ...arbitraryKeys(5_000, 6)]
  for (const key of keys) {
    for (const via of STYLES) {
      const kept = survives(key, via)
      for (const style of STYLES) {
        const twice = convertKey(convertKey(key, via), style)
        const straight = convertKey(key, style)
        if (kept && twice !== straight) failures.push(`${key} via ${via} → ${style}: ${twice}, straight ${straight}`)
        // snake and dash write every boundary, so lost words always show there.
        if (!kept && (style === 'snake' || style === 'dash') && twice === straight) failures.push(`${key} via ${via} → ${style}: words were lost but ${twice} matches`)
      }
    }
  }
  t.same(failures, [], 'styles agree on the words of every key')
})

t.test('happy: converting twice to one style changes nothing more, where the words survive', async (t) => {
  const failures: string[] = []
  const keys = [...TABLE.map(([key]) => key), ...arbitraryKeys(5_000, 3), ...canonicalKeys('_', 1_000, 4)]
  for (const key of keys) {
    for (const style of STYLES) {
      const once = convertKey(key, style)
      if (survives(key, style) && convertKey(once, style) !== once) failures.push(`${key} → ${style}`)
    }
  }
  t.same(failures, [], 'idempotent wherever the words survive')
  t.equal(convertKey(convertKey('x_a_b', 'camel'), 'camel'), 'xAb', 'and not where they do not: xAB reads as x|ab')
})

t.test('header: x-api-inflection values', async (t) => {
  const cases: Array<[string | string[] | undefined, ReturnType<typeof parseInflectionHeader>]> = [
    [undefined, { kind: 'none' }],
    ['camel', { kind: 'style', style: 'camel' }],
    ['CAMEL', { kind: 'style', style: 'camel' }],
    [' Dash ', { kind: 'style', style: 'dash' }],
    ['kebab', { kind: 'style', style: 'dash' }],
    ['KeBaB', { kind: 'style', style: 'dash' }],
    ['pascal', { kind: 'style', style: 'pascal' }],
    ['snake', { kind: 'style', style: 'snake' }],
    ['\tsnake', { kind: 'style', style: 'snake' }],
    ['', { kind: 'invalid' }],
    ['   ', { kind: 'invalid' }],
    ['camelCase', { kind: 'invalid' }],
    ['upper', { kind: 'invalid' }],
    ['snake_case', { kind: 'invalid' }],
    ['camel, camel', { kind: 'invalid' }],
    [['camel'], { kind: 'invalid' }],
    [['camel', 'camel'], { kind: 'invalid' }],
    [['camel', 'dash'], { kind: 'invalid' }],
    [[], { kind: 'invalid' }]
  ]
  for (const [value, expected] of cases) {
    t.same(parseInflectionHeader(value), expected, JSON.stringify(value) ?? 'absent')
  }
})

t.test('header: every allowed value is accepted, in any case, and maps to a key case', async (t) => {
  t.same([...ALLOWED_INFLECTION_VALUES].sort(), ['camel', 'dash', 'kebab', 'pascal', 'snake'])
  for (const value of ALLOWED_INFLECTION_VALUES) {
    for (const written of [value, value.toUpperCase()]) {
      const parsed = parseInflectionHeader(written)
      t.equal(parsed.kind, 'style', written)
      if (parsed.kind === 'style') t.ok(KEY_CASES.includes(parsed.style), `${written} is a key case`)
    }
  }
  t.same([...KEY_CASES].sort(), ['camel', 'dash', 'pascal', 'snake'])
  t.ok(isKeyCase('pascal'))
  t.notOk(isKeyCase('kebab'), 'kebab is a header synonym, not a native case')
  t.notOk(isKeyCase(undefined))
})

/** A key's new name through a table, as the rewriter asks for it: by its bytes and their hash. */
function lookup (table: RenameTable, key: string, hash?: number): string {
  const bytes = Buffer.from(key, 'latin1')
  let h = KEY_HASH_SEED
  for (const byte of bytes) h = hashStep(h, byte)
  const renamed = table.lookup(bytes, 0, bytes.length, hash ?? h)
  return renamed === null ? key : Buffer.from(renamed).toString('latin1')
}

t.test('RenameTable: answers as the rename does, SAME_NAME (null) for a name that stays', async (t) => {
  const table = new RenameTable((key) => convertKey(key, 'camel'))
  const bytes = Buffer.from('xx_id_yy')
  t.equal(table.lookup(bytes, 2, 6, [...bytes.subarray(2, 6)].reduce(hashStep, KEY_HASH_SEED)), null, '`_id` stays `_id`')
  for (const key of ['first_name', 'street_line_1', 'id', '__proto__', 'HTTPServer']) {
    t.equal(lookup(table, key), convertKey(key, 'camel'), `${key}, first`)
    t.equal(lookup(table, key), convertKey(key, 'camel'), `${key}, remembered`)
  }
  t.equal(table.size, 6)
})

t.test('RenameTable: bounded; once full it keeps its entries and stops adding', async (t) => {
  let calls = 0
  const table = new RenameTable((key) => { calls++; return convertKey(key, 'camel') }, { maxEntries: 1_000 })
  for (let i = 0; i < 1_000; i++) lookup(table, `common_key_${i}`)
  t.equal(table.size, 1_000, 'full')
  for (let i = 0; i < 1_500; i++) t.equal(lookup(table, `distinct_name_${i}`), convertKey(`distinct_name_${i}`, 'camel'))
  t.equal(table.size, 1_000, 'still full after 1 500 new names: nothing was cleared, nothing added')
  calls = 0
  t.equal(lookup(table, 'common_key_7'), 'commonKey7', 'an early entry still answers')
  t.equal(calls, 0, 'from memory')
  lookup(table, 'distinct_name_7')
  lookup(table, 'distinct_name_7')
  t.equal(calls, 2, 'a name that found the table full is renamed afresh each time')

  const byDefault = new RenameTable((key) => key)
  for (let i = 0; i < DEFAULT_RENAME_TABLE_ENTRIES + 100; i++) lookup(byDefault, `field_${i}`)
  t.equal(byDefault.size, DEFAULT_RENAME_TABLE_ENTRIES, 'default cap holds')
})

t.test('RenameTable: names whose hashes collide are told apart by their bytes', async (t) => {
  const table = new RenameTable((key) => convertKey(key, 'pascal'), { maxEntries: 64 })
  const keys = Array.from({ length: 40 }, (_, i) => `key_${i}_name`)
  for (const key of keys) t.equal(lookup(table, key, 12345), convertKey(key, 'pascal'), `${key}, one hash for all`)
  for (const key of keys) t.equal(lookup(table, key, 12345), convertKey(key, 'pascal'), `${key}, remembered`)
  t.equal(lookup(table, 'key_1_nam', 12345), 'Key1Nam', 'a prefix of a remembered name is another name')
})

t.test('RenameTable: onRemember hears each kept pair in order; clear forgets', async (t) => {
  const heard: Array<[string, string]> = []
  const table = new RenameTable((key) => convertKey(key, 'snake'), { maxEntries: 3, onRemember: (source, target) => heard.push([source, target]) })
  for (const key of ['firstName', 'id', 'firstName', 'lastName', 'middleName', 'extra']) lookup(table, key)
  t.same(heard, [['firstName', 'first_name'], ['id', 'id'], ['lastName', 'last_name']])
  table.clear()
  t.equal(table.size, 0)
  t.equal(lookup(table, 'middleName'), 'middle_name')
  t.equal(table.size, 1, 'remembering again after clear')
})

t.test('RenameTable: a bad capacity is refused at creation', async (t) => {
  for (const maxEntries of [0, -1, 1.5, Number.NaN]) {
    t.throws(() => new RenameTable((key) => key, { maxEntries }), RangeError, String(maxEntries))
  }
})
