import t from 'tap'
import {
  JsonKeyRewriter,
  KEY_CASES,
  KeySpellings,
  SpellingBook,
  convertKey,
  type KeyCase,
  type RenameTable
} from '../../gateway/inflection/index.js'
import { EDGE_KEYS_JSON } from '../../upstream-mock/edge-bodies.js'
import { pageMeta } from '../../upstream-mock/resource-routes.js'
import { seedMeeting, seedTask, seedUser } from '../../upstream-mock/seed.js'
import { seededRandom } from '../helpers/seeded-random.js'

/**
 * A name an upstream sent comes back to it in the spelling it sent, whatever style the
 * client uses in between: camel and pascal cannot say where a digit or a one-letter word
 * began, so the way back uses what the way out learned, and the rules only for names
 * this upstream never sent.
 */

function rewrite (table: RenameTable, text: string, chunkSize?: number): string {
  const bytes = Buffer.from(text)
  const rewriter = new JsonKeyRewriter(table)
  const out: Buffer[] = []
  const size = chunkSize ?? Math.max(bytes.length, 1)
  for (let at = 0; at < bytes.length; at += size) out.push(Buffer.from(rewriter.push(bytes.subarray(at, at + size))))
  rewriter.end()
  return Buffer.concat(out).toString()
}

/** One name through a table, as the rewriter renames it. */
function renameOne (table: RenameTable, key: string): string {
  const out = JSON.parse(rewrite(table, `{${JSON.stringify(key)}:0}`)) as object
  return Object.keys(out)[0] as string
}

/**
 * Upstream names in `separator` case: words of letters and digits, with words that are
 * digits only and one-letter words (the ones camel and pascal lose), and a leading or
 * trailing separator now and then.
 */
function upstreamKeys (separator: '_' | '-', count: number, seed: number): string[] {
  const next = seededRandom(seed)
  const pick = (alphabet: string): string => alphabet[Math.floor(next() * alphabet.length)] as string
  const keys: string[] = []
  for (let k = 0; k < count; k++) {
    const words: string[] = []
    for (let w = 1 + Math.floor(next() * 4); w > 0; w--) {
      const roll = next()
      let word = ''
      if (roll < 0.2) word = String(Math.floor(next() * 30))
      else if (roll < 0.35) word = pick('abcxyz')
      else {
        for (let c = 1 + Math.floor(next() * 6); c > 0; c--) word += pick(next() < 0.8 ? 'abcdefghijklmnopqrstuvwxyz' : '0123456789')
      }
      words.push(word)
    }
    const edge = next()
    keys.push((edge < 0.1 ? separator : '') + words.join(separator) + (edge > 0.93 ? separator : ''))
  }
  return keys
}

const NAMED = ['street_line_1', 'address_line1', 'x_a_b', 'v2_api', 'line_2_b', 'a_1', 'user_id', 'is_a_number', '_id', 'trailing_', 'x_1_y', 'http_2_server']

t.test('round trip: every name a snake or dash upstream sent comes back byte for byte, in every style', async (t) => {
  for (const [native, keys] of [
    ['snake', [...NAMED, ...upstreamKeys('_', 3_000, 1)]],
    ['dash', [...NAMED.map((key) => key.replaceAll('_', '-')), ...upstreamKeys('-', 3_000, 2)]]
  ] as Array<[KeyCase, string[]]>) {
    for (const style of KEY_CASES) {
      const spellings = new KeySpellings(native)
      const response = spellings.responseTable(style)
      const firstFor = new Map<string, string>()
      const failures: string[] = []
      let lossy = 0
      for (const key of keys) {
        const sent = renameOne(response, key)
        if (sent !== convertKey(key, style)) failures.push(`${key} → ${style} gave ${sent}`)
        if (!firstFor.has(sent)) firstFor.set(sent, key)
        if (convertKey(sent, native) !== key) lossy++
      }
      const request = spellings.requestTable(style)
      for (const key of keys) {
        const sent = convertKey(key, style)
        const back = renameOne(request, sent)
        // Two upstream names may meet in one client name (`line_1` and `line1` in camel): the first sent wins.
        const expected = firstFor.get(sent) as string
        if (back !== expected) failures.push(`${key} → ${style} ${sent} → back ${back}, expected ${expected}`)
      }
      t.same(failures, [], `${native} upstream, ${style} client: ${keys.length} names`)
      if (style === 'camel' || style === 'pascal') t.ok(lossy > 300, `${lossy} of these names the rules alone would not bring back`)
    }
  }
})

t.test('round trip: whole bodies, streamed in chunks, come back as the upstream wrote them', async (t) => {
  const keys = [...NAMED, ...upstreamKeys('_', 200, 3)]
  const unique = [...new Map(keys.map((key) => [convertKey(key, 'camel'), key])).values()]
  const record = (i: number): string => `{${unique.slice(i % 7, (i % 7) + 40).map((key, k) => `"${key}":${k % 3 === 0 ? `{"${unique[k] as string}":[${k},"v_${k}"]}` : `"${key}"`}`).join(', ')}}`
  const body = `{"items":[${Array.from({ length: 20 }, (_, i) => record(i)).join(',\n')}],"next_page_1":null}`
  for (const style of KEY_CASES) {
    const spellings = new KeySpellings('snake')
    const toClient = rewrite(spellings.responseTable(style), body, 13)
    if (style !== 'snake') t.not(toClient, body, `${style}: the client sees other names`)
    t.equal(rewrite(spellings.requestTable(style), toClient, 7), body, `${style}: the upstream gets its own bytes back`)
  }
})

t.test('round trip: every name the upstream mock sends comes back as the mock wrote it', async (t) => {
  const keys = new Set<string>()
  const collect = (value: unknown): void => {
    if (Array.isArray(value)) value.forEach(collect)
    else if (typeof value === 'object' && value !== null) {
      for (const [key, member] of Object.entries(value)) {
        keys.add(key)
        collect(member)
      }
    }
  }
  const records = Array.from({ length: 200 }, (_, i) => [seedUser(1, i + 1), seedTask(1, i + 1, 200), seedMeeting(1, i + 1, 200)])
  const pages = `[${JSON.stringify({ records, meta: pageMeta(1, 50, 200) })},${EDGE_KEYS_JSON}]`
  collect(JSON.parse(pages))
  t.ok(keys.size > 30, `${keys.size} names`)
  for (const style of KEY_CASES) {
    const spellings = new KeySpellings('snake')
    const toClient = rewrite(spellings.responseTable(style), pages, 5)
    const back = rewrite(spellings.requestTable(style), toClient, 5)
    // `collision` holds `user_name` then `userName`: both are one name in camel and snake,
    // so the second comes back as the first. Every other name comes back exact.
    const collidesInStyle = convertKey('user_name', style) === convertKey('userName', style)
    t.equal(back, collidesInStyle ? pages.replace('"userName": "from camel"', '"user_name": "from camel"') : pages, `${style}`)
    // Names the rewriter passes as written (`with space`, `日本語_key`) are never learned: they need no spelling.
    for (const key of [...keys].filter((key) => /^[A-Za-z0-9_-]*$/.test(key))) {
      t.equal(spellings.spellingOf(convertKey(key, style), style), key === 'userName' && collidesInStyle ? 'user_name' : key, `${key} via ${style}`)
    }
  }
})

t.test('names never seen follow the rules to the native case', async (t) => {
  const snake = new KeySpellings('snake')
  const request = snake.requestTable('camel')
  t.equal(renameOne(request, 'addressLine1'), 'address_line1', 'addressLine1 → address_line1: a digit continues a word')
  t.equal(renameOne(request, 'xAB'), 'x_ab', 'xAB → x_ab: an upper-case run is one word')
  t.equal(renameOne(request, 'userId'), 'user_id')
  t.equal(renameOne(request, 'HTTPServer'), 'http_server')
  t.equal(renameOne(request, 'with space'), 'with space')
  t.equal(renameOne(new KeySpellings('dash').requestTable('pascal'), 'AddressLine1'), 'address-line1')
  t.equal(renameOne(new KeySpellings('camel').requestTable('snake'), 'street_line_1'), 'streetLine1')
  t.equal(renameOne(new KeySpellings('pascal').requestTable('dash'), 'x-a-b'), 'XAB')
  t.equal(snake.spellingOf('addressLine1', 'camel'), undefined, 'nothing learned from requests')

  // Once the upstream has sent a name, the request table answers with its spelling,
  // even a request table that answered by the rules before.
  t.equal(renameOne(request, 'streetLine1'), 'street_line1', 'before: the rules')
  renameOne(snake.responseTable('camel'), 'street_line_1')
  t.equal(renameOne(snake.requestTable('camel'), 'streetLine1'), 'street_line_1', 'after: the spelling sent')
  t.equal(renameOne(snake.requestTable('pascal'), 'StreetLine1'), 'street_line1', 'learned per style: pascal has not seen it')
  t.equal(snake.spellingOf('streetLine1', 'camel'), 'street_line_1')
})

t.test('two upstream names for one client name: the first seen wins', async (t) => {
  for (const [first, second] of [['street_line_1', 'street_line1'], ['street_line1', 'street_line_1'], ['a_1', 'a1'], ['line_2', 'line2'], ['first_name', 'firstName']]) {
    const spellings = new KeySpellings('snake')
    t.equal(rewrite(spellings.responseTable('camel'), `{"${first as string}":1,"${second as string}":2}`), `{"${convertKey(first as string, 'camel')}":1,"${convertKey(second as string, 'camel')}":2}`)
    const name = convertKey(first as string, 'camel')
    t.equal(name, convertKey(second as string, 'camel'), `${first as string} and ${second as string} meet in ${name}`)
    t.equal(renameOne(spellings.requestTable('camel'), name), first, `${name} → ${first as string}`)
    renameOne(spellings.responseTable('camel'), second as string)
    t.equal(renameOne(spellings.requestTable('camel'), name), first, 'still the first after the second is sent again')
  }
})

t.test('learned spellings are bounded by maxEntries; past it, the rules answer', async (t) => {
  const maxEntries = 10
  const spellings = new KeySpellings('snake', maxEntries)
  const response = spellings.responseTable('camel')
  const keys = Array.from({ length: 50 }, (_, i) => `field_${i}_x`)
  t.equal(rewrite(response, `[${keys.map((key) => `{"${key}":1}`).join(',')}]`, 3), `[${keys.map((key) => `{"${convertKey(key, 'camel')}":1}`).join(',')}]`, 'all renamed')
  t.equal(response.size, maxEntries, 'the response table holds maxEntries names')
  const request = spellings.requestTable('camel')
  keys.forEach((key, i) => {
    const name = convertKey(key, 'camel')
    if (i < maxEntries) {
      t.equal(spellings.spellingOf(name, 'camel'), key, `${key} learned`)
      t.equal(renameOne(request, name), key, `${name} → ${key}`)
    } else {
      t.equal(spellings.spellingOf(name, 'camel'), undefined, `${key} not learned`)
      t.equal(renameOne(request, name), `field${i}_x`, `${name} → the rules`)
    }
  })
  t.ok(request.size <= maxEntries, 'the request table is bounded too')
})

t.test('SpellingBook: one KeySpellings per upstream, new when its native case changes', async (t) => {
  const book = new SpellingBook(100)
  const users = book.of({ name: 'users', keyCase: 'snake' })
  t.equal(book.of({ name: 'users', keyCase: 'snake' }), users, 'kept across reloads')
  t.not(book.of({ name: 'tasks', keyCase: 'snake' }), users, 'per upstream')
  renameOne(users.responseTable('camel'), 'street_line_1')
  const reloaded = book.of({ name: 'users', keyCase: 'dash' })
  t.not(reloaded, users, 'a new native case starts afresh')
  t.equal(reloaded.nativeCase, 'dash')
  t.equal(reloaded.spellingOf('streetLine1', 'camel'), undefined)
  for (const style of KEY_CASES) {
    t.equal(book.gatewayTable(style), book.gatewayTable(style), `${style}: one gateway table`)
    t.equal(renameOne(book.gatewayTable(style), 'street_line_1'), convertKey('street_line_1', style), `${style}: the rules`)
  }
})
