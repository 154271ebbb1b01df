import t, { type Test } from 'tap'
import {
  DEFAULT_MAX_DEPTH,
  InflectionDepthError,
  KEY_CASES,
  inflectKeys,
  inflectOwnedKeys,
  keyConverter
} from '../../gateway/inflection/index.js'
import { DEFAULT_SEED } from '../../upstream-mock/config.js'
import { EDGE_KEYS_JSON } from '../../upstream-mock/edge-bodies.js'
import { recordRng } from '../../upstream-mock/prng.js'
import { pageMeta } from '../../upstream-mock/resource-routes.js'
import { seedMeeting, seedTask, seedUser } from '../../upstream-mock/seed.js'

/** inflectOwnedKeys must serialise exactly like inflectKeys: the copy is the reference. */
function sameAsCopy (t: Test, text: string, name: string): void {
  for (const style of KEY_CASES) {
    const convert = keyConverter(style)
    const expected = JSON.stringify(inflectKeys(JSON.parse(text), convert))
    t.equal(JSON.stringify(inflectOwnedKeys(JSON.parse(text), convert)), expected, `${name} → ${style}`)
  }
}

/**
 * JSON text whose names come from the characters the splitter cares about, so that
 * collisions and repeated names happen; written as text so duplicates reach JSON.parse.
 */
function generatedBody (id: number): string {
  const rng = recordRng(DEFAULT_SEED, 7, id)
  const key = (): string => {
    let out = ''
    for (let i = rng.int(0, 10); i > 0; i--) out += rng.pick(['a', 'b', 'X', 'Y', '0', '1', '_', '-', '_'])
    return JSON.stringify(out)
  }
  const value = (depth: number): string => {
    const kind = depth > 3 ? 0 : rng.int(0, 3)
    if (kind === 0) return rng.pick(['1', '"a_b"', 'null', 'true', key()])
    const count = rng.int(0, kind === 1 ? 3 : 6)
    const items = Array.from({ length: count }, () => kind === 1 ? value(depth + 1) : `${key()}:${value(depth + 1)}`)
    return kind === 1 ? `[${items.join(',')}]` : `{${items.join(',')}}`
  }
  return value(0)
}

t.test('happy: the same JSON as inflectKeys for upstream-mock pages, edge keys and generated bodies', async (t) => {
  const users = Array.from({ length: 50 }, (_, i) => seedUser(DEFAULT_SEED, i + 1))
  sameAsCopy(t, JSON.stringify({ users, meta: pageMeta(1, 50, 100) }), 'users page')
  sameAsCopy(t, JSON.stringify({ tasks: Array.from({ length: 20 }, (_, i) => seedTask(DEFAULT_SEED, i + 1, 50)) }), 'tasks page')
  sameAsCopy(t, JSON.stringify({ meetings: Array.from({ length: 20 }, (_, i) => seedMeeting(DEFAULT_SEED, i + 1, 50)) }), 'meetings page')
  sameAsCopy(t, EDGE_KEYS_JSON, 'edge keys')
  sameAsCopy(t, '{"id":1,"kind":"a","first_name":"x","firstName":"y","last":{"a":1},"firstName":"z"}', 'collision after unchanged keys')
  sameAsCopy(t, '{"firstName":1,"first_name":2,"nested":{"a_b":{"c":[{"d_e":1}]}}}', 'collision with an unchanged key first')
  sameAsCopy(t, '{"first\\u005fname":1,"a\\"b":2,"plain":{"x_y":[1,{"z":null}]}}', 'escaped names')
  sameAsCopy(t, '{"10":1,"a_b":2,"2":3,"__proto__":{"x_y":1}}', 'index keys and __proto__')
  for (const text of ['1', '"a_b"', 'null', '[]', '{}', '[[],{},[{}]]']) sameAsCopy(t, text, text)
  for (let id = 1; id <= 300; id++) sameAsCopy(t, generatedBody(id), `generated body ${id}`)
})

t.test('happy: arrays and objects whose keys all stay are reused, renamed objects are new', async (t) => {
  const body = JSON.parse('{"items":[{"kind":"a","tags":["x"]},{"kind":"b"}],"total_count":2}') as {
    items: Array<{ kind: string, tags?: string[] }>, total_count: number
  }
  const { items } = body
  const [first] = items
  const out = inflectOwnedKeys(body, keyConverter('camel')) as { items: unknown[], totalCount: number }
  t.not(out, body, 'a renamed key: a new object')
  t.equal(out.items, items, 'the array is updated in place')
  t.equal(out.items[0], first, 'an object with no renamed key is kept')
  t.same(out, { items: [{ kind: 'a', tags: ['x'] }, { kind: 'b' }], totalCount: 2 })

  const snakeBody = JSON.parse('{"a_b":{"c_d":[1,{"e_f":2}]}}') as unknown
  t.equal(inflectOwnedKeys(snakeBody, keyConverter('snake')), snakeBody, 'snake to snake allocates nothing')
})

t.test('security: __proto__ stays an own member when the object is kept or copied', async (t) => {
  for (const style of KEY_CASES) {
    const out = inflectOwnedKeys(JSON.parse('{"__proto__":{"is_admin":true},"kept":{"__proto__":{"a_b":1}}}'), keyConverter(style)) as Record<string, unknown>
    t.equal(Object.getPrototypeOf(out), Object.prototype, `${style}: prototype untouched`)
    t.ok(Object.hasOwn(out, '__proto__'), `${style}: own member`)
    const kept = out[keyConverter(style)('kept')] as object
    t.ok(Object.hasOwn(kept, '__proto__'), `${style}: own member of a nested object, updated in place`)
    t.equal(Object.getPrototypeOf(kept), Object.prototype)
    t.equal(({} as Record<string, unknown>).is_admin, undefined, `${style}: Object.prototype untouched`)
  }
})

t.test('security: nesting beyond maxDepth throws InflectionDepthError; a bad limit is a RangeError', async (t) => {
  const deep = JSON.parse(`${'['.repeat(DEFAULT_MAX_DEPTH + 1)}${']'.repeat(DEFAULT_MAX_DEPTH + 1)}`) as unknown
  t.throws(() => inflectOwnedKeys(deep, keyConverter('camel')), InflectionDepthError)
  t.doesNotThrow(() => inflectOwnedKeys(JSON.parse('[[[{"a_b":1}]]]'), keyConverter('camel'), { maxDepth: 4 }))
  t.throws(() => inflectOwnedKeys(JSON.parse('[[[{"a_b":1}]]]'), keyConverter('camel'), { maxDepth: 3 }), InflectionDepthError)
  t.throws(() => inflectOwnedKeys({}, keyConverter('camel'), { maxDepth: 0 }), RangeError)
})
