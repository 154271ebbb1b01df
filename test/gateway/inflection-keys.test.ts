import t from 'tap'
import { EDGE_KEYS_JSON } from '../../upstream-mock/edge-bodies.js'
import { pageMeta } from '../../upstream-mock/resource-routes.js'
import { seedMeeting, seedTask, seedUser } from '../../upstream-mock/seed.js'
import {
  ALLOWED_INFLECTION_VALUES,
  KEY_CASES,
  MEMO_MAX_KEY_LENGTH,
  convertKey,
  createKeyConverter,
  isKeyCase,
  keyConverter,
  parseInflectionHeader,
  type KeyCase
} from '../../gateway/inflection/index.js'

/** Key → [snake, camel, dash, pascal]. */
const TABLE: Array<[string, [string, string, string, string]]> = [
  ['first_name', ['first_name', 'firstName', 'first-name', 'FirstName']],
  ['home_address', ['home_address', 'homeAddress', 'home-address', 'HomeAddress']],
  ['postal_code', ['postal_code', 'postalCode', 'postal-code', 'PostalCode']],
  ['last_login_at', ['last_login_at', 'lastLoginAt', 'last-login-at', 'LastLoginAt']],
  ['address_line_1', ['address_line_1', 'addressLine_1', 'address-line-1', 'AddressLine_1']],
  ['_id', ['_id', '_id', '_id', '_Id']],
  ['__proto__', ['__proto__', '__proto__', '__proto__', '__proto__']],
  ['constructor', ['constructor', 'constructor', 'constructor', 'Constructor']],
  ['prototype', ['prototype', 'prototype', 'prototype', 'Prototype']],
  ['HTTPServer', ['http_server', 'httpServer', 'http-server', 'HttpServer']],
  ['userID', ['user_id', 'userId', 'user-id', 'UserId']],
  ['already-dashed', ['already_dashed', 'alreadyDashed', 'already-dashed', 'AlreadyDashed']],
  ['with space', ['with space', 'with space', 'with space', 'with space']],
  ['日本語', ['日本語', '日本語', '日本語', '日本語']],
  ['', ['', '', '', '']],
  ['a', ['a', 'a', 'a', 'A']],
  ['x_1_y', ['x_1_y', 'x_1Y', 'x-1-y', 'X_1Y']],
  // Beyond the documented examples: the edges of each rule.
  ['firstName', ['first_name', 'firstName', 'first-name', 'FirstName']],
  ['FirstName', ['first_name', 'firstName', 'first-name', 'FirstName']],
  ['addressLine_1', ['address_line_1', 'addressLine_1', 'address-line-1', 'AddressLine_1']],
  ['addressLine1', ['address_line1', 'addressLine1', 'address-line1', 'AddressLine1']],
  ['trailing_', ['trailing_', 'trailing_', 'trailing_', 'Trailing_']],
  ['-leading-dash', ['-leading_dash', '-leadingDash', '-leading-dash', '-LeadingDash']],
  ['__typename', ['__typename', '__typename', '__typename', '__Typename']],
  ['_meta_', ['_meta_', '_meta_', '_meta_', '_meta_']],
  ['_', ['_', '_', '_', '_']],
  ['--', ['--', '--', '--', '--']],
  ['a__b', ['a__b', 'a__b', 'a__b', 'a__b']],
  ['a-_b', ['a-_b', 'a-_b', 'a-_b', 'a-_b']],
  ['a.b', ['a.b', 'a.b', 'a.b', 'a.b']],
  ['café_au_lait', ['café_au_lait', 'café_au_lait', 'café_au_lait', 'café_au_lait']],
  ['XMLHttpRequest', ['xml_http_request', 'xmlHttpRequest', 'xml-http-request', 'XmlHttpRequest']],
  ['ID', ['id', 'id', 'id', 'Id']],
  ['userIDs', ['user_i_ds', 'userIDs', 'user-i-ds', 'UserIDs']],
  ['v2_api', ['v2_api', 'v2Api', 'v2-api', 'V2Api']],
  ['1st_place', ['1st_place', '1stPlace', '1st-place', '1stPlace']],
  ['42', ['42', '42', '42', '42']],
  ['a_b', ['a_b', 'aB', 'a-b', 'A_B']],
  ['x_a_b', ['x_a_b', 'xA_B', 'x-a-b', 'X_A_B']],
  ['is_a_number', ['is_a_number', 'isANumber', 'is-a-number', 'IsANumber']],
  ['point_x_y2', ['point_x_y2', 'pointX_Y2', 'point-x-y2', 'PointX_Y2']]
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

/** Deterministic pseudo-random numbers (mulberry32), so a failure can be replayed. */
function random (seed: number): () => number {
  let state = seed
  return () => {
    state = (state + 0x6D2B79F5) | 0
    let x = Math.imul(state ^ (state >>> 15), 1 | state)
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296
  }
}

function pick (next: () => number, alphabet: string): string {
  return alphabet[Math.floor(next() * alphabet.length)] as string
}

/** Canonical separator-case keys: words of [a-z0-9] joined by one separator, optional prefix or suffix. */
function canonicalKeys (separator: '_' | '-', count: number, seed: number): string[] {
  const next = random(seed)
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
  const next = random(seed)
  const keys: string[] = []
  for (let k = 0; k < count; k++) {
    let key = ''
    const length = Math.floor(next() * 12)
    for (let c = 0; c < length; c++) key += pick(next, 'abcXYZ019_-')
    keys.push(key)
  }
  return keys
}

t.test('happy: each key in each style', async (t) => {
  for (const [key, expected] of TABLE) {
    STYLES.forEach((style, i) => {
      t.equal(convertKey(key, style), expected[i], `${JSON.stringify(key)} → ${style}`)
    })
  }
})

t.test('happy: snake → any style → snake is the identity for snake keys', async (t) => {
  const snakeKeys = [...TABLE.map(([key]) => key), ...UPSTREAM_KEYS].filter((key) => SNAKE_KEY.test(key))
  t.ok(snakeKeys.includes('address_line_1') && snakeKeys.includes('x_1_y') && snakeKeys.includes('_id'))
  t.ok(UPSTREAM_KEYS.length > 30, `the mock's ${UPSTREAM_KEYS.length} keys are all collected`)
  for (const key of snakeKeys) {
    for (const style of STYLES) {
      t.equal(convertKey(convertKey(key, style), 'snake'), key, `${key} via ${style}`)
    }
  }
})

t.test('happy: every key the upstream mock sends comes back as the mock wrote it, or as its snake form', async (t) => {
  // Non-snake edge keys (HTTPServer, userID, CamelCase, hasOwnProperty) reach the mock in
  // snake_case: the documented price of acronyms and mixed case. Everything else is exact.
  for (const key of UPSTREAM_KEYS) {
    for (const style of STYLES) {
      const back = convertKey(convertKey(key, style), 'snake')
      t.equal(back, SNAKE_KEY.test(key) ? key : convertKey(key, 'snake'), `${JSON.stringify(key)} via ${style}`)
    }
  }
  t.equal(convertKey('HTTPServer', 'snake'), 'http_server')
  t.equal(convertKey('日本語_key', 'camel'), '日本語_key', 'non-ASCII keys are left alone')
})

t.test('happy: the round trip holds for 5 000 generated snake keys and 5 000 dash keys', async (t) => {
  const failures: string[] = []
  for (const [separator, home] of [['_', 'snake'], ['-', 'dash']] as const) {
    for (const key of canonicalKeys(separator, 5_000, separator === '_' ? 1 : 2)) {
      for (const style of STYLES) {
        const back = convertKey(convertKey(key, style), home)
        if (back !== key) failures.push(`${key} via ${style} → ${back}`)
      }
    }
  }
  t.same(failures, [], 'no key changed on the way back')
})

t.test('happy: converting twice to the same style changes nothing more', async (t) => {
  const failures: string[] = []
  const keys = [...TABLE.map(([key]) => key), ...arbitraryKeys(5_000, 3), ...canonicalKeys('_', 1_000, 4)]
  for (const key of keys) {
    for (const style of STYLES) {
      const once = convertKey(key, style)
      if (convertKey(once, style) !== once) failures.push(`${key} → ${style}`)
    }
  }
  t.same(failures, [], 'every conversion is idempotent')
})

t.test('happy: every style splits a key into the same words, so any style reads back what another wrote', async (t) => {
  const failures: string[] = []
  for (const key of [...TABLE.map(([key]) => key), ...UPSTREAM_KEYS, ...canonicalKeys('_', 2_000, 5), ...arbitraryKeys(5_000, 6)]) {
    for (const via of STYLES) {
      for (const style of STYLES) {
        if (convertKey(convertKey(key, via), style) !== convertKey(key, style)) failures.push(`${key} via ${via} → ${style}`)
      }
    }
  }
  t.same(failures, [], 'styles agree on the words of every key')
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

t.test('memo: bounded, and a remembered conversion equals a fresh one', async (t) => {
  const convert = createKeyConverter('camel', { maxEntries: 1_000 })
  let largest = 0
  for (let i = 0; i < 100_000; i++) {
    convert(`key_${i}_name`)
    largest = Math.max(largest, convert.memoSize)
  }
  t.ok(largest <= 1_000, `memo never above its cap (largest ${largest})`)
  t.ok(convert.memoSize > 0, 'memo in use')
  t.equal(convert('key_99999_name'), 'key_99999Name', 'hit')
  t.equal(convert('key_1_name'), convertKey('key_1_name', 'camel'), 'miss after clearing')
  t.equal(convert.style, 'camel')

  const byDefault = createKeyConverter('dash')
  for (let i = 0; i < 100_000; i++) byDefault(`field_${i}`)
  t.ok(byDefault.memoSize <= 10_000, `default cap holds (${byDefault.memoSize})`)
})

t.test('memo: once full it keeps its entries and stops adding (a body of distinct names cannot empty it)', async (t) => {
  const convert = createKeyConverter('camel', { maxEntries: 1_000 })
  for (let i = 0; i < 1_000; i++) convert(`common_key_${i}`)
  t.equal(convert.memoSize, 1_000, 'full')
  for (let i = 0; i < 1_500; i++) t.equal(convert(`distinct_name_${i}`), convertKey(`distinct_name_${i}`, 'camel'))
  t.equal(convert.memoSize, 1_000, 'still full after 1 500 new names: nothing was cleared, nothing added')
  t.equal(convert('common_key_7'), 'commonKey_7', 'an early entry still answers')
})

t.test('memo: keys longer than the limit are converted but not remembered', async (t) => {
  const convert = createKeyConverter('camel')
  const long = `${'very_'.repeat(MEMO_MAX_KEY_LENGTH)}long`
  t.equal(convert(long), convertKey(long, 'camel'))
  t.equal(convert.memoSize, 0, 'nothing remembered')
  convert('short_key')
  t.equal(convert.memoSize, 1)
})

t.test('memo: a bad capacity is refused at creation', async (t) => {
  t.throws(() => createKeyConverter('camel', { maxEntries: 0 }), RangeError)
  t.throws(() => createKeyConverter('camel', { maxEntries: 1.5 }), RangeError)
})

t.test('memo: one shared converter per style', async (t) => {
  for (const style of KEY_CASES) {
    t.equal(keyConverter(style), keyConverter(style), `${style} shared`)
    t.equal(keyConverter(style).style, style)
  }
  t.not(keyConverter('camel'), keyConverter('pascal'))
})
