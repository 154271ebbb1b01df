import t from 'tap'
import {
  DEFAULT_MAX_DEPTH,
  DuplicateNameError,
  InflectionDepthError,
  JsonKeyRewriter,
  KEY_CASES,
  RenameTable,
  convertKey,
  type KeyCase,
  type KeyRewriterOptions
} from '../../gateway/inflection/index.js'

function table (style: KeyCase): RenameTable {
  return new RenameTable((key) => convertKey(key, style))
}

function rewrite (text: string, style: KeyCase, options: KeyRewriterOptions = {}, chunkSize?: number): string {
  const bytes = Buffer.from(text)
  const rewriter = new JsonKeyRewriter(table(style), options)
  const out: Buffer[] = []
  const size = chunkSize ?? Math.max(bytes.length, 1)
  for (let at = 0; at < bytes.length; at += size) out.push(Buffer.from(rewriter.push(bytes.subarray(at, at + size))))
  rewriter.end()
  return Buffer.concat(out).toString()
}

/** Chunk sizes every case below is run with: whole, one byte, and a few cuts between. */
const CHUNKS = [undefined, 1, 2, 3, 5, 11]

t.test('happy: names convert at every depth, through arrays', async (t) => {
  const body = '{"total_count":2,"data":[{"user_id":1,"home_address":{"address_line_1":"1 Main St","postal_code":"75001"},"roles":["admin"],"tags":[]},' +
    '{"user_id":2,"home_address":null,"roles":[],"recent_tasks":[[{"due_date":"2025-01-01","is_done":false}]]}],"next_page_token":null}'
  for (const chunk of CHUNKS) {
    t.equal(rewrite(body, 'camel', {}, chunk),
      '{"totalCount":2,"data":[{"userId":1,"homeAddress":{"addressLine1":"1 Main St","postalCode":"75001"},"roles":["admin"],"tags":[]},' +
      '{"userId":2,"homeAddress":null,"roles":[],"recentTasks":[[{"dueDate":"2025-01-01","isDone":false}]]}],"nextPageToken":null}', `camel, chunks of ${chunk ?? 'all'}`)
    t.equal(rewrite(body, 'dash', {}, chunk), body.replaceAll(/"([a-z_0-9]+)":/g, (_, key: string) => `"${key.replaceAll('_', '-')}":`), 'dash')
    t.equal(rewrite(body, 'snake', {}, chunk), body, 'snake to snake: the same bytes')
    t.equal(rewrite(body, 'pascal', {}, chunk).slice(0, 36), '{"TotalCount":2,"Data":[{"UserId":1,', 'pascal')
  }
})

t.test('happy: values are never touched, only names', async (t) => {
  const body = '{"some_key":"snake_value","list":["first_name",3,true,null],"first_name":{"x_y":"a_b"},"s":"\\"q_r\\":1"}'
  t.equal(rewrite(body, 'camel'), '{"someKey":"snake_value","list":["first_name",3,true,null],"firstName":{"xY":"a_b"},"s":"\\"q_r\\":1"}')
})

t.test('happy: scalars, empty containers and whitespace pass through as written', async (t) => {
  for (const text of ['null', '0', '42.5', '""', '"snake_case"', 'true', 'false', '[]', '{}', '[[],{},[{}]]', ' {\n "a_b" :\t1 }\r\n']) {
    for (const style of KEY_CASES) {
      const expected = text.replace('"a_b"', `"${convertKey('a_b', style)}"`)
      for (const chunk of CHUNKS) t.equal(rewrite(text, style, {}, chunk), expected, `${JSON.stringify(text)} → ${style}`)
    }
  }
})

t.test('happy: two names that convert to one are both kept, in order; a parser then sees the later value', async (t) => {
  const out = rewrite('{"first_name":"a","middle":"m","firstName":"b"}', 'camel')
  t.equal(out, '{"firstName":"a","middle":"m","firstName":"b"}')
  t.same(JSON.parse(out), { firstName: 'b', middle: 'm' })
})

t.test('security: a __proto__ member stays an own member after parsing and changes no prototype', async (t) => {
  const text = '{"__proto__":{"polluted":true},"user_name":"x","nested":[{"__proto__":{"is_admin":true}}]}'
  for (const style of KEY_CASES) {
    for (const chunk of CHUNKS) {
      const serialised = rewrite(text, style, {}, chunk)
      t.match(serialised, /^\{"__proto__":\{"[pP]olluted":true\},/, `${style}: written out first, as received`)
      t.match(serialised, /\[\{"__proto__":\{"(is_admin|isAdmin|is-admin|IsAdmin)":true\}\}\]/, `${style}: nested too, its members renamed`)
      const out = JSON.parse(serialised) as Record<string, unknown>
      t.equal(Object.getPrototypeOf(out), Object.prototype, `${style}: the parsed output's prototype is untouched`)
      t.ok(Object.hasOwn(out, '__proto__'), `${style}: own member`)
      t.equal((out as { polluted?: unknown }).polluted, undefined, `${style}: nothing inherited`)
      t.equal(({} as Record<string, unknown>).polluted, undefined, `${style}: Object.prototype untouched`)
      t.equal(({} as Record<string, unknown>).is_admin, undefined)
      t.equal(({} as Record<string, unknown>).isAdmin, undefined)
    }
  }
})

t.test('security: constructor and prototype members are ordinary data', async (t) => {
  const text = '{"constructor":{"prototype":{"polluted":true}},"prototype":{"to_string":1}}'
  for (const style of KEY_CASES) {
    const out = JSON.parse(rewrite(text, style)) as Record<string, unknown>
    const constructorKey = style === 'pascal' ? 'Constructor' : 'constructor'
    t.ok(Object.hasOwn(out, constructorKey), `${style}: own ${constructorKey}`)
    t.equal(Object.getPrototypeOf(out), Object.prototype)
    t.equal(({} as Record<string, unknown>).polluted, undefined, `${style}: Object.prototype untouched`)
  }
  t.equal(rewrite(text, 'camel'), '{"constructor":{"prototype":{"polluted":true}},"prototype":{"toString":1}}')
  t.equal(typeof ({}).constructor, 'function', 'Object.prototype.constructor intact')
})

t.test('security: nesting beyond maxDepth throws InflectionDepthError, not RangeError', async (t) => {
  const deep = `${'['.repeat(100_000)}${']'.repeat(100_000)}`
  const error = t.throws(() => rewrite(deep, 'camel'))
  t.ok(error instanceof InflectionDepthError, 'InflectionDepthError')
  t.notOk(error instanceof RangeError, 'not a stack overflow')
  t.match(error, { code: 'inflection_depth_exceeded', maxDepth: DEFAULT_MAX_DEPTH, name: 'InflectionDepthError' })
  t.throws(() => rewrite(`${'{"a":'.repeat(100_000)}1${'}'.repeat(100_000)}`, 'camel', {}, 4096), InflectionDepthError, 'objects, streamed')

  const atDefault = `${'{"child_node":['.repeat(DEFAULT_MAX_DEPTH / 2)}1${']}'.repeat(DEFAULT_MAX_DEPTH / 2)}`
  t.equal(rewrite(atDefault, 'camel'), atDefault.replaceAll('child_node', 'childNode'), 'exactly the default depth is fine')
  t.throws(() => rewrite(`[${atDefault}]`, 'camel'), InflectionDepthError, 'one more is not')
  t.throws(() => new JsonKeyRewriter(table('camel'), { maxDepth: 0 }), RangeError, 'a bad limit is misuse')
  t.throws(() => new JsonKeyRewriter(table('camel'), { maxDepth: Number.NaN }), RangeError)
  t.throws(() => new JsonKeyRewriter(table('camel'), { maxDepth: 1.5 }), RangeError)
})

t.test('uniqueNames: two members of one object that share a name once renamed are refused', async (t) => {
  const cases: Array<[string, KeyCase, string]> = [
    ['{"first_name":1,"firstName":2}', 'snake', 'first_name'],
    ['{"first_name":1,"firstName":2}', 'camel', 'firstName'],
    ['{"firstName":1,"FirstName":2}', 'dash', 'first-name'],
    ['{"a":1,"a":2}', 'snake', 'a'],
    ['{"a":1,"a":2}', 'camel', 'a'],
    ['{"a b":1,"a b":2}', 'camel', 'a b'],
    ['{"":1,"":2}', 'pascal', ''],
    ['{"a_b":1,"a\\u005fb":2}', 'snake', 'a_b'],
    ['{"x":{"a":1},"y":2,"x":3}', 'camel', 'x'],
    ['{"a":1,"b":{"c":{"d":1}},"a":2}', 'camel', 'a'],
    ['[{"ok":1},{"user_id":1,"userId":2}]', 'pascal', 'UserId'],
    ['{"a":[{"b":1,"b":2}]}', 'camel', 'b'],
    ['{"__proto__":1,"__proto__":2}', 'camel', '__proto__']
  ]
  for (const [text, style, name] of cases) {
    for (const chunk of CHUNKS) {
      t.throws(() => rewrite(text, style, { uniqueNames: true }, chunk), { name: 'DuplicateNameError', code: 'duplicate_member', memberName: name },
        `${text} → ${style}, chunks of ${chunk ?? 'all'}`)
    }
  }
  t.ok(new DuplicateNameError('x') instanceof Error)
})

t.test('uniqueNames: the same name in sibling or nested objects is fine', async (t) => {
  const cases = [
    '[{"a":1},{"a":2}]',
    '{"x":{"a":1},"y":{"a":2}}',
    '{"a":{"a":{"a":1}}}',
    '{"b":{"a":1},"a":2}',
    '{"a":1,"b":[{"a":2,"first_name":1},{"firstName":2}]}',
    '{"first_name":{"first_name":1},"last":{"firstName":2}}',
    '[{"first_name":1},{"firstName":2}]',
    '{"a_b":1,"a\\u005fb":2}'
  ]
  for (const text of cases) {
    for (const chunk of CHUNKS) {
      // `a_b` and `a\u005fb` are one name in snake only: to camel the first becomes `aB`.
      t.doesNotThrow(() => rewrite(text, 'camel', { uniqueNames: true }, chunk), `${text}, chunks of ${chunk ?? 'all'}`)
    }
  }
  t.equal(rewrite('{"first_name":1,"firstName":2}', 'snake'), '{"first_name":1,"first_name":2}', 'without the option both are kept')
})

t.test('uniqueNames: names passed as written that span chunks are compared whole', async (t) => {
  // The name is needed whole, though the rewriter passes it as written and holds none of it back.
  const duplicated = ['{"a b":1,"a b":2}', '{"a\\u005fb":1,"a\\u005fb":2}', '{"é_x":1,"é_x":2}', '{"a\\\\":1,"a\\\\":2}']
  for (const text of duplicated) {
    for (const chunk of [1, 2, 3]) {
      t.throws(() => rewrite(text, 'camel', { uniqueNames: true }, chunk), { name: 'DuplicateNameError' }, `${text}, chunks of ${chunk}`)
    }
  }
  const distinct = ['{"x a":1,"y a":2}', '{"xa\\u005fb":1,"ya\\u005fb":2}', '{"a\\\\":1,"b\\\\":2}', '{"a\\"":1}']
  for (const text of distinct) {
    for (const chunk of [1, 2, 3]) {
      t.doesNotThrow(() => rewrite(text, 'camel', { uniqueNames: true }, chunk), `${text}, chunks of ${chunk}`)
    }
  }
})

t.test('keepTopLevel: the listed names keep their spelling at the top level only', async (t) => {
  const keep = new Set(['status_code', 'type', 'invalid_params'])
  const text = '{"type":"about:blank","status_code":400,"invalid_params":[{"status_code":1,"field_name":"x"}],"error_detail":{"status_code":2},"trace_id":"t"}'
  // `type` would be `Type` in pascal were it not kept.
  const expected: Record<KeyCase, string> = {
    camel: '{"type":"about:blank","status_code":400,"invalid_params":[{"statusCode":1,"fieldName":"x"}],"errorDetail":{"statusCode":2},"traceId":"t"}',
    pascal: '{"type":"about:blank","status_code":400,"invalid_params":[{"StatusCode":1,"FieldName":"x"}],"ErrorDetail":{"StatusCode":2},"TraceId":"t"}',
    dash: '{"type":"about:blank","status_code":400,"invalid_params":[{"status-code":1,"field-name":"x"}],"error-detail":{"status-code":2},"trace-id":"t"}',
    snake: text
  }
  for (const style of KEY_CASES) {
    for (const chunk of CHUNKS) {
      t.equal(rewrite(text, style, { keepTopLevel: keep }, chunk), expected[style], `${style}, chunks of ${chunk ?? 'all'}`)
    }
  }
  t.equal(rewrite('[{"status_code":1}]', 'camel', { keepTopLevel: keep }), '[{"statusCode":1}]', 'an object in a top-level array is depth 2')
  t.equal(rewrite('{"statusCode":1}', 'snake', { keepTopLevel: keep }), '{"status_code":1}', 'only the listed spelling is kept')
  t.equal(rewrite('{"status_code":1,"a":{"b":{}},"type_name":2}', 'camel', { keepTopLevel: keep }, 1), '{"status_code":1,"a":{"b":{}},"typeName":2}', 'depth is back to 1 after a nested object')
})

t.test('keepTopLevel with uniqueNames: a kept name still counts as a name of its object', async (t) => {
  const options = { uniqueNames: true, keepTopLevel: new Set(['type', 'status_code']) }
  for (const text of ['{"type":1,"type":2}', '{"status_code":1,"statusCode":2}', '{"statusCode":1,"status_code":2}']) {
    t.throws(() => rewrite(text, 'snake', options), DuplicateNameError, text)
  }
  t.equal(rewrite('{"type":1,"status_code":2,"a":{"type":3}}', 'camel', options), '{"type":1,"status_code":2,"a":{"type":3}}', 'distinct names pass')
})
