import t from 'tap'
import { JsonKeyRewriter, KEY_CASES, KeySpellings, RenameTable } from '../../gateway/inflection/index.js'
import { MICRO_SHAPES, RECORD_KEYS, buildRecordsPage, buildUsersPage } from '../../bench/micro/bodies.js'
import { MAX_BLOCK_MS, measureEventLoopBlock } from '../../bench/micro/event-loop-block.js'
import { MIN_RATIO, MICRO_SIZES, checkRewrite, formatMicroTable, formatStreamTable, runInflectionMicro } from '../../bench/micro/inflection.js'
import { MAX_GROWTH_MIB, runStreamMemory } from '../../bench/micro/stream-memory.js'

/**
 * The harness, not the numbers: tiny runs return well-formed rows, and the guards that
 * keep a rewriter that skips work from looking fast do refuse it. Timings belong to
 * `npm run bench`, never to tests on a shared machine.
 */
t.test('a tiny run returns one well-formed row per shape, size and style', async (t) => {
  const sizes = [{ label: '1 KB', bytes: 1024 }, { label: '8 KB', bytes: 8 * 1024 }]
  const progress: string[] = []
  const results = await runInflectionMicro({ quick: true, budgetMs: 150, sizes, onProgress: (line) => { progress.push(line) } })

  t.same(results.map((r) => [r.shape, r.size, r.style]),
    MICRO_SHAPES.flatMap((shape) => sizes.flatMap((size) => KEY_CASES.map((style) => [shape.label, size.label, style]))),
    'every shape × size × style, in order')
  t.same(MICRO_SHAPES.map((shape) => shape.label), ['narrow', '40-key records'])
  for (const r of results) {
    const name = `${r.shape} ${r.size} ${r.style}`
    for (const field of ['bytes', 'parseMBps', 'decodeParseMBps', 'rewriteMBps', 'ratio'] as const) {
      t.ok(Number.isFinite(r[field]) && r[field] > 0, `${name}: ${field} is a finite positive number (${r[field]})`)
    }
    t.ok(Number.isInteger(r.bytes), `${name}: bytes is an integer`)
    t.equal(r.met, r.ratio >= MIN_RATIO, `${name}: met says whether the rewriter keeps up with JSON.parse`)
  }
  t.equal(progress.length, results.length, 'one progress line per row')
  t.match(progress[0], /^inflection narrow 1 KB camel: JSON\.parse [\d.]+ MB\/s, rewrite [\d.]+ MB\/s, ratio [\d.]+ (met|MISSED) \(\d+ rounds\)$/)

  const table = formatMicroTable(results).split('\n')
  t.equal(table.length, results.length + 1, 'the table has a header and one line per row')
  t.match(table[0], /^shape\s+size\s+bytes\s+style\s+JSON\.parse MB\/s\s+decode\+parse MB\/s\s+rewrite MB\/s\s+ratio\s+≥ 1\.0$/)
})

t.test('the guard passes the rewriter and refuses output that is not the body renamed', async (t) => {
  for (const shape of MICRO_SHAPES) {
    const body = shape.build(4 * 1024)
    const spellings = new KeySpellings('snake')
    for (const style of KEY_CASES) t.doesNotThrow(() => { checkRewrite(body, spellings, style) }, `${shape.label} to ${style}`)
  }

  // A body whose names two styles cannot tell apart cannot come back byte for byte.
  const ambiguous = Buffer.from('{"first_name":1,"firstName":2}')
  t.throws(() => { checkRewrite(ambiguous, new KeySpellings('snake'), 'camel') }, /and back did not give the input bytes/)
  // Names the rules leave alone change nothing: to camel that would be a rewriter doing no work.
  t.throws(() => { checkRewrite(Buffer.from('{"id":1,"name":"x"}'), new KeySpellings('snake'), 'camel') }, /changed nothing/)
  // Tables that rename to a name the rules would not give, and back: the bytes come back, the parsed output is wrong.
  const misnaming = { nativeCase: 'snake', responseTable: () => new RenameTable(() => 'given'), requestTable: () => new RenameTable(() => 'first_name') }
  t.throws(() => { checkRewrite(Buffer.from('{"first_name":"ada"}'), misnaming as unknown as KeySpellings, 'camel') }, /did not parse to the input with its names converted/)
})

t.test('bodies are the pages described, near the wanted size, the same on every call', async (t) => {
  for (const { label, bytes } of MICRO_SIZES.slice(0, 2)) {
    const users = buildUsersPage(bytes)
    t.same(users, buildUsersPage(bytes), `narrow ${label}: deterministic`)
    const page = JSON.parse(users.toString('utf8')) as { users: Array<Record<string, unknown>>, meta: Record<string, unknown> }
    t.ok(page.users.length >= 1, `narrow ${label}: at least one user`)
    t.match(page.users[0], { id: 1, first_name: String, home_address: { postal_code: String }, preferences: { email_notifications: Object } },
      `narrow ${label}: upstream-mock users, snake_case with nested objects`)
    t.match(page.meta, { page: 1, per_page: page.users.length, total_count: page.users.length })
    const oneUser = Buffer.byteLength(JSON.stringify(page.users[0]))
    t.ok(Math.abs(users.length - bytes) <= oneUser, `narrow ${label}: ${users.length} bytes is within one user of ${bytes}`)

    const records = buildRecordsPage(bytes)
    t.same(records, buildRecordsPage(bytes), `40-key records ${label}: deterministic`)
    const wide = JSON.parse(records.toString('utf8')) as { records: Array<Record<string, unknown>>, meta: Record<string, unknown> }
    t.ok(wide.records.length >= 1, `40-key records ${label}: at least one record`)
    for (const record of wide.records) t.same(Object.keys(record), RECORD_KEYS, `40-key records ${label}: every record has the 40 keys`)
    const oneRecord = Buffer.byteLength(JSON.stringify(wide.records[0]))
    t.ok(Math.abs(records.length - bytes) <= oneRecord, `40-key records ${label}: ${records.length} bytes is within one record of ${bytes}`)
  }
  t.equal(RECORD_KEYS.length, 40)
  t.equal(new Set(RECORD_KEYS).size, 40, 'no key repeats')
  t.ok(RECORD_KEYS.every((key) => /^[a-z][a-z0-9]*(_[a-z0-9]+)+$/.test(key)), 'every key is multi-word snake_case')
  const camel = new JsonKeyRewriter(new KeySpellings('snake').responseTable('camel')).rewriteAll(buildRecordsPage(1024))
  t.equal(new Set(Object.keys((JSON.parse(camel.toString('utf8')) as { records: Array<Record<string, unknown>> }).records[0] ?? {})).size, 40,
    'the 40 keys stay 40 distinct names in camelCase')
})

t.test('the event-loop row streams every shape and style in 64 KiB pushes and judges the longest', async (t) => {
  const progress: string[] = []
  const result = await measureEventLoopBlock({ bodyBytes: 200 * 1024, onProgress: (line) => { progress.push(line) } })
  t.equal(result.chunkBytes, 64 * 1024)
  t.equal(result.passes, MICRO_SHAPES.length * KEY_CASES.length, 'one pass per shape × style')
  t.equal(result.pushes, result.passes * Math.ceil(result.bodyBytes / result.chunkBytes), 'one push per chunk of each pass')
  for (const field of ['longestPushMs', 'medianPushMs', 'longestPushCpuMs', 'loopDelayMaxMs', 'loopDelayP99Ms'] as const) {
    t.ok(Number.isFinite(result[field]) && result[field] >= 0, `${field} is a finite number (${result[field]})`)
  }
  t.ok(result.longestPushMs >= result.medianPushMs, 'the longest push is at least the median')
  t.equal(result.maxBlockMs, MAX_BLOCK_MS)
  t.equal(result.met, result.longestPushMs <= MAX_BLOCK_MS, 'met judges the longest push')
  t.match(progress.join('\n'), /^inflection event loop: longest push [\d.]+ ms of \d+/)
})

t.test('the memory row streams a generated body through a rewriter in a child process and checks its output', async (t) => {
  const progress: string[] = []
  const result = await runStreamMemory({ bodyBytes: 4 * 1024 * 1024, onProgress: (line) => { progress.push(line) } })
  t.ok(Math.abs(result.bodyBytes - 4 * 1024 * 1024) < 256 * 1024, `about the bytes asked for (${result.bodyBytes})`)
  t.equal(result.style, 'camel')
  for (const field of ['rssBeforeMiB', 'rssPeakMiB', 'rssFinalMiB', 'growthMiB', 'retainedMiB'] as const) {
    t.ok(Number.isFinite(result[field]), `${field} is a finite number (${result[field]})`)
  }
  t.ok(result.rssPeakMiB >= result.rssBeforeMiB && result.rssPeakMiB >= result.rssFinalMiB, 'the peak is the highest reading')
  t.ok(Math.abs(result.growthMiB - (Math.max(result.rssPeakMiB, result.rssFinalMiB) - result.rssBeforeMiB)) < 1e-9, 'growth is the peak over before')
  t.equal(result.maxGrowthMiB, MAX_GROWTH_MIB)
  t.equal(result.met, result.growthMiB <= MAX_GROWTH_MIB)
  t.match(progress.join('\n'), /^inflection stream memory: \d+ MB to camel, RSS \+[\d.-]+ MiB/)

  const eventLoop = await measureEventLoopBlock({ bodyBytes: 64 * 1024 })
  const table = formatStreamTable({ eventLoop, memory: result }).split('\n')
  t.equal(table.length, 3, 'a header, the event-loop row and the memory row')
  t.match(table[1], /≤ 10 ms/)
  t.match(table[2], /≤ 32 MiB/)
})
