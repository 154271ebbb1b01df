import t from 'tap'
import { InflectionMembersError, JsonKeyRewriter, RenameTable, convertKey, countMembers, type KeyRewriterOptions } from '../../gateway/inflection/index.js'

/** The rewriter's work per body is bounded by its number of object members, at every depth together. */

function rewrite (text: string, options: KeyRewriterOptions, chunkSize?: number): string {
  const bytes = Buffer.from(text)
  const rewriter = new JsonKeyRewriter(new RenameTable((key) => convertKey(key, 'camel')), options)
  const out: Buffer[] = []
  const size = chunkSize ?? Math.max(bytes.length, 1)
  for (let at = 0; at < bytes.length; at += size) out.push(Buffer.from(rewriter.push(bytes.subarray(at, at + size))))
  rewriter.end()
  return Buffer.concat(out).toString()
}

/** `count` members in one object, with the separator between them written as `comma`. */
const wide = (count: number, comma = ','): string => `{${Array.from({ length: count }, (_, i) => `"a_b${i}":0`).join(comma)}}`

const CHUNKS = [undefined, 1, 2, 5]

t.test('maxMembers: at the cap is fine, one more throws, whatever the spacing and chunking', async (t) => {
  // `,"` right after a value and `, "` with whitespace between are read by different paths.
  for (const comma of [',', ' ,', ', ', ',\n\t', ' , ']) {
    for (const chunk of CHUNKS) {
      const how = `${JSON.stringify(comma)}, chunks of ${chunk ?? 'all'}`
      t.equal(rewrite(wide(10, comma), { maxMembers: 10 }, chunk), wide(10, comma).replaceAll('a_b', 'aB'), `10 of 10, ${how}`)
      t.throws(() => rewrite(wide(11, comma), { maxMembers: 10 }, chunk), { name: 'InflectionMembersError', code: 'inflection_members_exceeded', maxMembers: 10 }, `11 of 10, ${how}`)
    }
  }
  t.equal(rewrite('{ "a" : 1 }', { maxMembers: 1 }), '{ "a" : 1 }', 'a first member after whitespace')
  t.throws(() => rewrite('{ "a" : 1 , "b" : 2 }', { maxMembers: 1 }), InflectionMembersError)
})

t.test('maxMembers and countMembers (the request bodies\' count before any rename): members at every depth count together; arrays, strings and empty objects do not', async (t) => {
  const cases: Array<[string, number]> = [
    ['{}', 0], ['[]', 0], ['1', 0], ['"a:b,\\"c\\":1"', 0], ['[{},{},[{}]]', 0],
    ['{"a":1}', 1],
    ['{"a":{"b":[{"c":1},{"d":"x:y"}]},"e":null}', 5],
    ['{"a\\":":"\\"b:","c":"\\\\","d":1}', 3],
    ['{"日本:語":"é:"}', 1],
    ['[1,2,3,"a","b"]', 0],
    [JSON.stringify({ list: Array.from({ length: 100 }, (_, i) => ({ id: i, name: `n${i}` })) }), 201],
    [JSON.stringify(Array.from({ length: 60 }, (_, i) => ({ a_b: i, c: { d_e: i } }))), 180]
  ]
  for (const [text, count] of cases) {
    const label = text.length > 50 ? `${text.slice(0, 50)}…` : text
    t.equal(countMembers(Buffer.from(text)), count, `${label}: countMembers`)
    for (const chunk of CHUNKS) {
      t.doesNotThrow(() => rewrite(text, { maxMembers: count }, chunk), `${label}: ${count} members fit a cap of ${count}`)
      if (count > 0) t.throws(() => rewrite(text, { maxMembers: count - 1 }, chunk), InflectionMembersError, `${label}: not a cap of ${count - 1}`)
    }
  }
})

t.test('maxMembers: unlimited by default; the error comes before the text ends', async (t) => {
  t.equal(countMembers(Buffer.from(wide(1_000)), 10), 11, 'countMembers stops once past the limit')
  t.doesNotThrow(() => rewrite(wide(50_000), {}), 'no cap unless asked')
  // Not JSON beyond the cap: the cap is reached first, while the text is still valid.
  t.throws(() => rewrite(`${wide(11).slice(0, -1)},"x":garbage`, { maxMembers: 10 }), InflectionMembersError)
  const rewriter = new JsonKeyRewriter(new RenameTable((key) => key), { maxMembers: 2 })
  t.throws(() => rewriter.push(Buffer.from('[{"a":1,"b":2},{"c"')), InflectionMembersError, 'thrown by push, not at end')
})
