import t from 'tap'
import { KEY_CASES } from '../../gateway/inflection/index.js'
import { MAX_COST_RATIO, MICRO_SIZES, buildUsersPage, formatMicroTable, runInflectionMicro } from '../../bench/micro/inflection.js'

/**
 * The harness, not the numbers: a tiny run returns one well-formed result per size and
 * style. Timings belong to `npm run bench`, never to tests on a shared machine.
 */
t.test('a tiny run returns one well-formed result per size and style', async (t) => {
  const sizes = [{ label: '1 KB', bytes: 1024 }, { label: '8 KB', bytes: 8 * 1024 }]
  const progress: string[] = []
  const results = await runInflectionMicro({ quick: true, budgetMs: 100, sizes, onProgress: (line) => { progress.push(line) } })

  t.same(results.map((r) => [r.size, r.style]), sizes.flatMap((size) => KEY_CASES.map((style) => [size.label, style])), 'every size × style, in order')
  for (const r of results) {
    const name = `${r.size} ${r.style}`
    for (const field of ['bytes', 'parseStringifyMBps', 'inflectMBps', 'costRatio'] as const) {
      t.ok(Number.isFinite(r[field]) && r[field] > 0, `${name}: ${field} is a finite positive number (${r[field]})`)
    }
    t.ok(Number.isInteger(r.bytes), `${name}: bytes is an integer`)
    t.equal(r.met, r.costRatio <= MAX_COST_RATIO, `${name}: met says whether the ratio is within ${MAX_COST_RATIO}`)
  }
  t.equal(progress.length, results.length, 'one progress line per result')
  t.match(progress[0], /^inflection 1 KB camel: parse\+stringify [\d.]+ MB\/s, inflect [\d.]+ MB\/s, ratio [\d.]+ (met|MISSED) \(\d+ rounds\)$/)

  const table = formatMicroTable(results).split('\n')
  t.equal(table.length, results.length + 1, 'the table has a header and one line per result')
  t.match(table[0], /^size\s+bytes\s+style\s+parse\+stringify MB\/s\s+inflect MB\/s\s+cost ratio\s+≤ 1\.3$/)
})

t.test('bodies are upstream-mock users pages near the wanted size, the same on every call', async (t) => {
  for (const { label, bytes } of MICRO_SIZES.slice(0, 2)) {
    const body = buildUsersPage(bytes)
    t.same(body, buildUsersPage(bytes), `${label}: deterministic`)
    const page = JSON.parse(body.toString('utf8')) as { users: Array<Record<string, unknown>>, meta: Record<string, unknown> }
    t.ok(page.users.length >= 1, `${label}: at least one user`)
    t.match(page.users[0], { id: 1, first_name: String, home_address: { postal_code: String }, preferences: { email_notifications: Object } },
      `${label}: snake_case records with nested objects`)
    t.match(page.meta, { page: 1, per_page: page.users.length, total_count: page.users.length })
    // Closest page: one user more or less would be farther from the target.
    const oneUser = Buffer.byteLength(JSON.stringify(page.users[0]))
    t.ok(Math.abs(body.length - bytes) <= oneUser, `${label}: ${body.length} bytes is within one user of ${bytes}`)
  }
})
