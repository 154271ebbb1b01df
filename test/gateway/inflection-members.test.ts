import t from 'tap'
import {
  countMembers, convertKey, InflectionDepthError, InflectionMembersError, inflectKeys, inflectOwnedKeys, keyConverter
} from '../../gateway/inflection/index.js'
import { inflectRequestBody, inflectResponseBody } from '../../gateway/proxy/json-bodies.js'

/** Inflection work per body is bounded by its number of object members, counted before parsing for requests. */

const camel = keyConverter('camel')
const wide = (count: number): string => `{${Array.from({ length: count }, (_, i) => `"a_b${i}":0`).join(',')}}`

t.test('countMembers: one per member, at every depth, whatever the strings hold', async (t) => {
  const cases: Array<[string, number]> = [
    ['{}', 0], ['[]', 0], ['1', 0], ['"a:b"', 0],
    ['{"a":1}', 1],
    ['{"a":{"b":[{"c":1},{"d":"x:y"}]},"e":null}', 5],
    ['{"a\\":":"\\"b:","c":"\\\\","d":1}', 3],
    ['{"日本:語":"é:"}', 1],
    [JSON.stringify({ list: Array.from({ length: 100 }, (_, i) => ({ id: i, name: `n${i}` })) }), 201]
  ]
  for (const [text, count] of cases) {
    t.equal(countMembers(Buffer.from(text)), count, text.length > 60 ? `${text.slice(0, 60)}…` : text)
    const parsed: unknown = JSON.parse(text)
    let members = 0
    inflectKeys(parsed, (key) => { members++; return key })
    t.equal(members, count, 'the same count as the transform')
  }
  t.equal(countMembers(Buffer.from(wide(1_000)), 10), 11, 'stops once past the limit')
})

t.test('transform: maxMembers caps every walk, depth or not', async (t) => {
  t.same(inflectKeys(JSON.parse(wide(100)), camel, { maxMembers: 100 }), JSON.parse(wide(100).replaceAll('a_b', 'aB')), '100 of 100')
  t.throws(() => inflectKeys(JSON.parse(wide(101)), camel, { maxMembers: 100 }), InflectionMembersError)
  t.throws(() => inflectOwnedKeys(JSON.parse(wide(101)), camel, { maxMembers: 100 }), InflectionMembersError)
  const spread = JSON.stringify(Array.from({ length: 60 }, (_, i) => ({ a_b: i, c: { d_e: i } })))
  t.throws(() => inflectOwnedKeys(JSON.parse(spread), camel, { maxMembers: 150 }), InflectionMembersError, '180 members in 120 objects')
  t.throws(() => inflectOwnedKeys([[[1]]], camel, { maxDepth: 2, maxMembers: 10 }), InflectionDepthError, 'depth is still checked')
  t.throws(() => inflectKeys({}, camel, { maxMembers: 0 }), RangeError)
  t.equal(convertKey('a_b', 'camel'), 'aB')
})

t.test('request bodies: more members than the cap is a 400 body_too_wide, counted before parsing', async (t) => {
  t.equal(inflectRequestBody(Buffer.from(wide(10)), 'snake', 512, 10), wide(10), 'at the cap: converted')
  t.throws(() => inflectRequestBody(Buffer.from(wide(11)), 'snake', 512, 10), { code: 'body_too_wide', statusCode: 400, message: 'The JSON body has more than 10 object members and cannot be inflected.' })
  // Not JSON, but too wide: the count comes first, and no parse is spent on it.
  t.throws(() => inflectRequestBody(Buffer.from(`${wide(11)}garbage`), 'snake', 512, 10), { code: 'body_too_wide' })
  t.throws(() => inflectRequestBody(Buffer.from('{"a":'), 'snake', 512, 10), { code: 'malformed_json' })
})

t.test('upstream bodies: more members than the cap is a 502 upstream_body_not_inflectable', async (t) => {
  t.equal(inflectResponseBody(Buffer.from(wide(10)), 'camel', 512, 10), wide(10).replaceAll('a_b', 'aB'))
  t.throws(() => inflectResponseBody(Buffer.from(wide(11)), 'camel', 512, 10),
    { code: 'upstream_body_not_inflectable', statusCode: 502, message: 'The upstream answered JSON that cannot be inflected: it has more than 10 object members.' })
})
