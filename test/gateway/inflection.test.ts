import t from 'tap'
import {
  DEFAULT_MAX_DEPTH,
  InflectionDepthError,
  inflectJsonText,
  inflectKeys,
  keyConverter
} from '../../gateway/inflection/index.js'

const camel = keyConverter('camel')
const snake = keyConverter('snake')

function nested (depth: number): unknown {
  let value: unknown = { leaf_value: 1 }
  for (let i = 1; i < depth; i++) value = i % 2 === 0 ? [value] : { child_node: value }
  return value
}

function deepFreeze<T> (value: T): T {
  if (typeof value === 'object' && value !== null) {
    for (const key of Object.keys(value)) deepFreeze((value as Record<string, unknown>)[key])
    Object.freeze(value)
  }
  return value
}

t.test('happy: keys convert at every depth, through arrays', async (t) => {
  const body = {
    total_count: 2,
    data: [
      { user_id: 1, home_address: { address_line_1: '1 Main St', postal_code: '75001' }, roles: ['admin'], tags: [] },
      { user_id: 2, home_address: null, roles: [], recent_tasks: [[{ due_date: '2025-01-01', is_done: false }]] }
    ],
    next_page_token: null
  }
  t.same(inflectKeys(body, camel), {
    totalCount: 2,
    data: [
      { userId: 1, homeAddress: { addressLine_1: '1 Main St', postalCode: '75001' }, roles: ['admin'], tags: [] },
      { userId: 2, homeAddress: null, roles: [], recentTasks: [[{ dueDate: '2025-01-01', isDone: false }]] }
    ],
    nextPageToken: null
  })
  t.same(inflectKeys(inflectKeys(body, camel), snake), body, 'and back to snake')
  t.same(inflectKeys(body, keyConverter('dash')), JSON.parse(JSON.stringify(body).replaceAll(/"([a-z_0-9]+)":/g,
    (_, key: string) => `"${key.replaceAll('_', '-')}":`)), 'dash')
})

t.test('happy: values are never touched, only keys', async (t) => {
  const body = { some_key: 'snake_value', list: ['first_name', 3, true, null], first_name: { x_y: 'a_b' } }
  t.same(inflectKeys(body, camel), { someKey: 'snake_value', list: ['first_name', 3, true, null], firstName: { xY: 'a_b' } })
})

t.test('happy: primitives, null and empty containers pass through', async (t) => {
  for (const value of [null, 0, 42.5, '', 'snake_case', true, false, undefined]) {
    t.equal(inflectKeys(value, camel), value, String(value))
  }
  t.same(inflectKeys([], camel), [])
  t.same(inflectKeys({}, camel), {})
  t.same(inflectKeys([[], {}, [{}]], camel), [[], {}, [{}]])
})

t.test('happy: the input is never modified and the output shares no container with it', async (t) => {
  const body = deepFreeze({ user_list: [{ first_name: 'Ada', home_address: { postal_code: '1' } }], meta_data: {} })
  const before = JSON.stringify(body)
  const out = inflectKeys(body, camel) as { userList: Array<{ homeAddress: object }>, metaData: object }
  t.equal(JSON.stringify(body), before, 'input unchanged (it is frozen, so a write would also throw)')
  t.not(out.userList, body.user_list)
  t.not(out.userList[0]?.homeAddress, body.user_list[0]?.home_address)
  t.not(out.metaData, body.meta_data)
  t.notOk(Object.isFrozen(out), 'the copy is a fresh, ordinary object')
  t.equal(Object.getPrototypeOf(out), Object.prototype)
})

t.test('happy: null-prototype objects convert; non-plain objects are kept as they are', async (t) => {
  const bare = Object.assign(Object.create(null) as object, { first_name: 'Ada' })
  t.same(JSON.parse(JSON.stringify(inflectKeys({ bare }, camel))), { bare: { firstName: 'Ada' } })
  const when = new Date(0)
  const out = inflectKeys({ created_at: when }, camel) as { createdAt: Date }
  t.equal(out.createdAt, when, 'Date kept by reference')
  t.equal(JSON.stringify(out), '{"createdAt":"1970-01-01T00:00:00.000Z"}')
})

t.test('happy: two keys that convert to the same name: the later value wins, at the earlier position', async (t) => {
  const out = inflectKeys({ first_name: 'a', middle: 'm', firstName: 'b' }, camel)
  t.equal(JSON.stringify(out), '{"firstName":"b","middle":"m"}')
})

t.test('happy: inflectJsonText parses, converts and serialises', async (t) => {
  t.equal(inflectJsonText('{"first_name":"Ada","items":[{"due_date":1}]}', 'pascal'), '{"FirstName":"Ada","Items":[{"DueDate":1}]}')
  t.equal(inflectJsonText('[1,"a_b",null]', 'camel'), '[1,"a_b",null]')
  t.equal(inflectJsonText('"first_name"', 'camel'), '"first_name"')
  t.throws(() => inflectJsonText('{"a":', 'camel'), SyntaxError)
  t.throws(() => inflectJsonText('[[[1]]]', 'camel', 2), InflectionDepthError)
  t.equal(inflectJsonText('[[[1]]]', 'camel', 3), '[[[1]]]')
})

t.test('security: a __proto__ member stays an own member and changes no prototype', async (t) => {
  const text = '{"__proto__":{"polluted":true},"user_name":"x","nested":[{"__proto__":{"is_admin":true}}]}'
  for (const style of ['camel', 'snake', 'dash', 'pascal'] as const) {
    const out = inflectKeys(JSON.parse(text), keyConverter(style)) as Record<string, unknown>
    t.equal(Object.getPrototypeOf(out), Object.prototype, `${style}: the copy's prototype is untouched`)
    t.ok(Object.hasOwn(out, '__proto__'), `${style}: own member`)
    t.equal(({} as Record<string, unknown>).polluted, undefined, `${style}: Object.prototype untouched`)
    t.equal((out as { polluted?: unknown }).polluted, undefined, `${style}: nothing inherited`)
    const serialised = JSON.stringify(out)
    t.match(serialised, /^\{"__proto__":\{"[pP]olluted":true\},/, `${style}: written out first, as received`)
    t.match(serialised, /\[\{"__proto__":\{"(is_admin|isAdmin|is-admin|IsAdmin)":true\}\}\]/, `${style}: nested too`)
  }
  const viaText = inflectJsonText(text, 'camel')
  t.match(viaText, /"__proto__":\{"polluted":true\}/, 'inflectJsonText keeps it')
  t.equal(({} as Record<string, unknown>).polluted, undefined)
})

t.test('security: constructor and prototype members are ordinary data', async (t) => {
  const body = JSON.parse('{"constructor":{"prototype":{"polluted":true}},"prototype":{"to_string":1}}') as unknown
  for (const style of ['camel', 'snake', 'dash', 'pascal'] as const) {
    const out = inflectKeys(body, keyConverter(style)) as Record<string, Record<string, unknown>>
    const constructorKey = style === 'pascal' ? 'Constructor' : 'constructor'
    t.ok(Object.hasOwn(out, constructorKey), `${style}: own ${constructorKey}`)
    t.equal(({} as Record<string, unknown>).polluted, undefined, `${style}: Object.prototype untouched`)
    t.equal(Object.getPrototypeOf(out), Object.prototype)
  }
  t.equal(JSON.stringify(inflectKeys(body, camel)), '{"constructor":{"prototype":{"polluted":true}},"prototype":{"toString":1}}')
  t.equal(typeof ({}).constructor, 'function', 'Object.prototype.constructor intact')
})

t.test('security: a converter that returns __proto__ for another key still makes an own member', async (t) => {
  const out = inflectKeys({ evil: { polluted: true } }, () => '__proto__') as object
  t.equal(Object.getPrototypeOf(out), Object.prototype)
  t.equal(JSON.stringify(out), '{"__proto__":{"__proto__":true}}')
  t.equal(({} as Record<string, unknown>).polluted, undefined)
})

t.test('security: inherited enumerable properties are not copied', async (t) => {
  const prototype = Object.prototype as Record<string, unknown>
  Object.defineProperty(prototype, 'injected_key', { value: 1, enumerable: true, configurable: true, writable: true })
  try {
    t.equal(JSON.stringify(inflectKeys({ own_key: 1 }, camel)), '{"ownKey":1}')
  } finally {
    delete prototype.injected_key
  }
})

t.test('security: nesting beyond maxDepth throws InflectionDepthError, not RangeError', async (t) => {
  const deep = nested(10_000)
  const error = t.throws(() => inflectKeys(deep, camel))
  t.ok(error instanceof InflectionDepthError, 'InflectionDepthError')
  t.notOk(error instanceof RangeError, 'not a stack overflow')
  t.match(error, { code: 'inflection_depth_exceeded', maxDepth: DEFAULT_MAX_DEPTH, name: 'InflectionDepthError' })

  const text = `${'['.repeat(10_000)}${']'.repeat(10_000)}`
  t.throws(() => inflectJsonText(text, 'camel'), InflectionDepthError, 'from text as well')

  t.doesNotThrow(() => inflectKeys(nested(DEFAULT_MAX_DEPTH), camel), 'exactly the default depth is fine')
  t.throws(() => inflectKeys(nested(DEFAULT_MAX_DEPTH + 1), camel), InflectionDepthError, 'one more is not')
  t.doesNotThrow(() => inflectKeys(nested(3), camel, { maxDepth: 3 }))
  t.throws(() => inflectKeys(nested(4), camel, { maxDepth: 3 }), InflectionDepthError)
  t.throws(() => inflectKeys({}, camel, { maxDepth: 0 }), RangeError, 'a bad limit is misuse')
  t.throws(() => inflectKeys({}, camel, { maxDepth: Number.NaN }), RangeError)
})
