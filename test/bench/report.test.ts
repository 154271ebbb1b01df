import t from 'tap'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { BenchResult, ScenarioResult } from '../../bench/report/types.js'
import { formatMBps, formatMicros, formatMs, formatNumber, formatRate, formatRatio, formatSignedMs } from '../../bench/report/format.js'
import { INVALID_MARK, MET_MARK, MISSED_MARK, NO_SCENARIOS, REPORTED_MARK, markdownInline, renderMainTable, renderMarkdown, verdictMark } from '../../bench/report/markdown.js'
import { renderSvg } from '../../bench/report/svg.js'
import { README_END_MARKER, README_START_MARKER, renderReadmeSummary, replaceReadmeBlock } from '../../bench/report/summary.js'
import { writeReports } from '../../bench/report/write.js'
import { tempDir } from '../helpers/temp.js'
import { fixtureResult, withoutSections } from './fixtures/result.js'
import { xmlProblems } from './well-formed.js'

const NBSP = '\u00a0'

/** The cells of a Markdown table row, split on unescaped pipes. */
function cells (row: string): string[] {
  return row.split(/(?<!\\)\|/).slice(1, -1).map((cell) => cell.trim())
}

/** The data rows of the first table after `heading`. */
function tableRows (markdown: string, heading: string): string[][] {
  const start = markdown.indexOf(`${heading}\n`)
  if (start === -1) return []
  const lines = markdown.slice(start).split('\n').slice(1)
  const first = lines.findIndex((line) => line.startsWith('|'))
  const rows: string[] = []
  for (const line of lines.slice(first)) {
    if (!line.startsWith('|')) break
    rows.push(line)
  }
  return rows.slice(2).map(cells)
}

function expectedMark (scenario: ScenarioResult): string {
  if (scenario.target.minThroughputRatio === undefined) return REPORTED_MARK
  if (!scenario.valid) return INVALID_MARK
  return scenario.met === true ? MET_MARK : MISSED_MARK
}

t.test('happy: figures are written the same way everywhere', async (t) => {
  t.equal(formatRate(12_345.6), `12${NBSP}346`, 'req/s: whole, thousands grouped')
  t.equal(formatRate(1_234_567), `1${NBSP}234${NBSP}567`)
  t.equal(formatRate(999), '999')
  t.equal(formatRatio(0.8149), '0.81', 'ratios: 2 decimals')
  t.equal(formatMs(10.406), '10.41', 'ms: 2 decimals')
  t.equal(formatMBps(1_412.34), `1${NBSP}412.3`, 'MB/s: 1 decimal')
  t.equal(formatSignedMs(0.61), '+0.61', 'an excess carries its sign')
  t.equal(formatSignedMs(-0.004), '0.00', 'no sign on a figure that rounds to zero')
  t.equal(formatNumber(-12_345.67, 1), `-12${NBSP}345.7`)
  t.equal(formatRatio(Number.NaN), '—', 'a ratio over a zero baseline shows a dash, not NaN')
  t.equal(formatRate(Number.POSITIVE_INFINITY), '—')
})

t.test('happy: the Markdown report', async (t) => {
  const markdown = renderMarkdown(fixtureResult, { chartPath: '2026-03-02.svg' })

  t.match(markdown, /^# Portier benchmark, 2026-03-02 \(full run\)\n/, 'heading with date and mode')
  t.match(markdown, 'Started 2026-03-02 14:15:03 UTC, took 12 min 38 s.')
  t.match(markdown, '- **Machine:** AMD EPYC 7B13, 2 cores, 7.8 GiB RAM, Linux 6.1.0-18-cloud-amd64 (Debian 12), Node v20.20.2, Redis 7.0.15, nginx absent')
  t.match(markdown, '- **Settings:** 10 s × 3 rounds, 64 connections;')
  t.match(markdown, `- **Keys:** 100${NBSP}000 in identity, 20${NBSP}000 distinct in traffic`)
  t.match(markdown, '- **Load generator:** wrk 4.1.0, 1 thread', 'the report names the load generator')
  t.match(markdown, '![throughput, p99 and proxy CPU per scenario](2026-03-02.svg)', 'the chart is embedded')
  t.notMatch(renderMarkdown(fixtureResult), '![', 'no chart without a chart path')

  const rows = tableRows(markdown, '## Scenarios')
  t.equal(rows.length, fixtureResult.scenarios.length, 'one main-table row per scenario')
  fixtureResult.scenarios.forEach((scenario, index) => {
    const row = rows[index] as string[]
    t.equal(row.length, 10, `${scenario.id}: ten cells`)
    t.equal(row[0], markdownInline(scenario.title), `${scenario.id}: title`)
    t.equal(row[3], formatRatio(scenario.throughputRatio), `${scenario.id}: ratio`)
    t.equal(row[9], expectedMark(scenario), `${scenario.id}: met mark`)
    t.equal(row[9], verdictMark(scenario), `${scenario.id}: the verdict the summary shares`)
  })
  t.same(rows.map((row) => row[9]), [MET_MARK, MISSED_MARK, MET_MARK, MET_MARK, REPORTED_MARK, INVALID_MARK],
    'the JWT run misses, the health run is reported only, the 30 KB run is not judged (headroom under 3)')
  t.same(rows[0], [
    '`GET /users` with a valid API key, warm cache',
    `11${NBSP}132`,
    `12${NBSP}087`,
    '0.92',
    '0.75',
    '161 / 151 (1.07)',
    '10.41 / 9.80 (+0.61)',
    '3.21',
    'throughput ≥ 0.90 × bare proxy; CPU ≤ 1.15 × bare; p99 ≤ bare p99 + 1 ms',
    MET_MARK
  ], 'a row in full: candidate and against medians, ratio, ratio to the node floor, CPU pair with its ratio, p99 pair with its excess, headroom, target')
  t.same((rows[5] as string[]).slice(7), ['2.22 ⚠', '≥ 0.90 × bare proxy', INVALID_MARK], 'too little headroom: flagged, and the scenario is marked invalid rather than judged')
  t.equal((rows[2] as string[])[4], '—', 'no node floor in the rotation: no ratio to it')
  t.equal((rows[3] as string[])[2], `11${NBSP}161`, 'the baseline column follows the target’s `against`, not the bare proxy')

  const realistic = tableRows(markdown, '## Realistic upstream')
  t.equal(realistic.length, 1, 'the realistic-upstream scenarios have a table of their own')
  t.equal(realistic[0]?.[0], 'upstream-mock `GET /users`, API key')
  t.equal(realistic[0]?.[9], REPORTED_MARK, 'reported, not judged')
  t.ok(markdown.indexOf('## Realistic upstream') > markdown.indexOf('## Scenarios'), 'after the judged scenarios')

  const variants = tableRows(markdown, '## Every variant')
  const variantCount = [...fixtureResult.scenarios, ...fixtureResult.realistic].reduce((count, scenario) => count + scenario.variants.length, 0)
  t.equal(variants.length, variantCount, 'one detail row per variant of every scenario, realistic ones included')
  t.ok(variants.some((row) => row[1] === 'direct to the static upstream (`direct`)' && row[2] === 'reference'), 'the direct reference is listed')
  t.same(variants[0], [
    '`GET /users` with a valid API key, warm cache',
    'direct to the static upstream (`direct`)',
    'reference',
    `38${NBSP}810`,
    `38${NBSP}655–39${NBSP}120`,
    '1.31',
    '3.12',
    '0',
    '0',
    '0',
    '—',
    '2.56'
  ], 'a detail row: median req/s, the rounds’ range, p50, p99, non-2xx, errors, timeouts, no proxy CPU for direct, its ratio to the node floor')
  const bare = variants.find((row) => row[1]?.includes('(`bare`)') === true)
  t.equal(bare?.at(-2), '151', 'a proxy’s row has its median CPU µs per request')
  t.equal(bare?.at(-1), '0.80', 'and its ratio to the node floor of the same rotation')

  const notes = markdown.slice(markdown.indexOf('## Notes'))
  t.ok(markdown.indexOf('## Notes') > markdown.indexOf('## Every variant'), 'notes come under the tables')
  t.match(notes, '- `GET /users` with a Bearer JWT: ES256 verification dominates the profile')
  t.match(notes, '- ⚠ `GET /users` 30 KB, API key: not judged: direct ran at 2.22 × the bare proxy, less than 3 ×', 'an invalid scenario says why')
  t.match(notes, '- ⚠ `GET /users` with `x-api-inflection: camel` on a 50-user page: gateway, camel inflection saw 3 non-2xx, 0 errors, 0 timeouts over 3 rounds',
    'a variant that saw non-2xx answers is flagged')

  t.same(tableRows(markdown, '## Invalid-key flood'), [['0', '41.3', '12.8', '333.3', '0.64', 'argon2 verifications/s never more than the negative cache allows', MET_MARK]])
  t.same(tableRows(markdown, '## Login and refresh'), [['38.4', `1${NBSP}912.7`, '49.81', 'refreshes/s ≥ 20 × logins/s', MET_MARK]])
  t.same(tableRows(markdown, '## Gateway memory'), [['96.4', '108.9', '131.2', '1.13', 'final RSS ≤ 1.2 × warm-up RSS', MET_MARK]])
  const micro = tableRows(markdown, '## Inflection micro-benchmark')
  t.equal(micro.length, fixtureResult.micro.length, 'one micro row per shape, size and style')
  t.same(micro[5], ['40-key records', '10 MB', 'pascal', '251.2', '201.7', '219.8', '0.87', MISSED_MARK])
  t.match(markdown, 'Target: the rewriter renames at least as many MB/s as `JSON.parse` parses (ratio ≥ 1.00).')
  const streaming = tableRows(markdown, '## Inflection, streaming')
  t.same(streaming.map((row) => row.slice(1)), [['4.27 ms', '≤ 10 ms', MET_MARK], ['36.1 MiB', '≤ 32 MiB', MISSED_MARK]], 'the event-loop and memory rows, judged')
  t.match(streaming[0]?.[0], 'longest synchronous push while 8 bodies of 10.0 MB are renamed in 64 KiB chunks')
  t.match(streaming[1]?.[0], 'RSS growth of a process streaming 200 MB to camel through one rewriter')
  t.match(markdown, '## Skipped\n\n- nginx reference: no nginx binary on PATH', 'skipped parts as bullets')
  t.ok(markdown.endsWith('\n') && !markdown.endsWith('\n\n'), 'one final newline')
})

t.test('happy: sections without data are left out', async (t) => {
  const markdown = renderMarkdown(withoutSections(fixtureResult))
  for (const heading of ['## Realistic upstream', '## Invalid-key flood', '## Login and refresh', '## Gateway memory', '## Inflection micro-benchmark', '## Inflection, streaming', '## Skipped']) {
    t.notMatch(markdown, heading, `${heading} is omitted`)
  }
  t.match(markdown, '## Scenarios', 'the scenarios stay')
  t.notMatch(markdown, '\n\n\n', 'no empty gaps where sections were')

  const noScenarios: BenchResult = { ...withoutSections(fixtureResult), scenarios: [] }
  const empty = renderMarkdown(noScenarios)
  t.match(empty, `## Scenarios\n\n${NO_SCENARIOS}`, 'no scenario: a line says so')
  t.notMatch(empty, '## Every variant')
  t.notMatch(empty, '## Notes')
  t.equal(xmlProblems(renderSvg(noScenarios)).length, 0, 'the chart of a run without scenarios is still well-formed')
})

t.test('security: text from the result cannot break the Markdown', async (t) => {
  const markdown = renderMarkdown(fixtureResult)
  t.match(markdown, '1 000 configured routes vs 10 (≥ 0.95 ×, p99 &lt; 5 ms &amp; warm cache)', '< and & are escaped')
  t.notMatch(markdown, '< 5 ms', 'no raw <')
  t.equal(markdownInline('a | b `c | d` <i>*x*</i>'), 'a \\| b `c \\| d` &lt;i&gt;\\*x\\*&lt;/i&gt;', 'pipes escaped everywhere, the rest outside code spans only')
  t.equal(markdownInline('line one\nline two'), 'line one line two', 'a newline cannot end a table row')
})

t.test('the well-formedness check catches what it is there for', async (t) => {
  t.same(xmlProblems('<svg a="1"><g><text>x &amp; y</text></g><rect/></svg>\n'), [], 'a well-formed document passes')
  t.not(xmlProblems('<svg><g></svg>').length, 0, 'unbalanced tags')
  t.not(xmlProblems('<svg><text>a < b</text></svg>').length, 0, 'a raw < in text')
  t.not(xmlProblems('<svg><text>a & b</text></svg>').length, 0, 'a raw & in text')
  t.not(xmlProblems('<svg a="x<y"/>').length, 0, 'a raw < in an attribute')
  t.not(xmlProblems('<svg a="1" a="2"/>').length, 0, 'a repeated attribute')
  t.not(xmlProblems('<svg/><svg/>').length, 0, 'two roots')
})

t.test('happy: the SVG chart', async (t) => {
  const svg = renderSvg(fixtureResult)
  t.same(xmlProblems(svg), [], 'well-formed XML')
  t.match(svg, /^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg" width="900" /, 'an SVG document 900 px wide')
  t.equal(svg, renderSvg(structuredClone(fixtureResult)), 'deterministic')

  const expected = [...fixtureResult.scenarios, ...fixtureResult.realistic].flatMap((scenario) => scenario.variants.map((variant) => `${scenario.id}/${variant.id}`))
  for (const panel of ['throughput', 'p99', 'cpu']) {
    const bars = [...svg.matchAll(new RegExp(`<rect class="bar" data-panel="${panel}" data-scenario="([^"]*)" data-variant="([^"]*)"`, 'g'))]
      .map((match) => `${match[1]}/${match[2]}`)
    t.same(bars, expected, `${panel}: one bar per variant of every scenario`)
  }
  t.match(svg, `>${formatRate(11_132)}</text>`, 'throughput values are printed on the bars')
  t.match(svg, `>${formatMs(10.41)}</text>`, 'p99 values are printed on the bars')
  t.match(svg, `>${formatMicros(161)}</text>`, 'CPU µs per request values are printed on the bars')
  t.match(svg, /<rect class="bar" data-panel="cpu" data-scenario="api-key" data-variant="direct" x="270" y="[\d.]+" width="0"/, 'direct, which runs no proxy, has an empty CPU bar')
  t.match(svg, 'GET /users 30 KB, API key (invalid: headroom 2.22 × &lt; 3 ×)', 'an invalid scenario says so in its title')
  t.match(svg, '<g data-legend="roles">', 'a legend')
  for (const role of ['candidate', 'baseline', 'reference']) t.match(svg, `>${role}</text>`, `the legend names ${role}`)
  t.match(svg, 'requests per second (median of 3 rounds)', 'throughput axis label')
  t.match(svg, 'p99 latency, ms (median of 3 rounds)', 'p99 axis label')
  t.match(svg, 'proxy CPU µs per request (median of 3 rounds)', 'CPU axis label')
  t.notMatch(svg, /href|<script|@import|url\(|<style/, 'nothing is loaded from elsewhere')
})

t.test('security: text in the chart is escaped', async (t) => {
  const svg = renderSvg(fixtureResult)
  t.match(svg, '1 000 configured routes vs 10 (≥ 0.95 ×, p99 &lt; 5 ms &amp; warm cache)', '< and & are escaped')
  t.match(svg, '(≥ 0.95 ×, p99', 'non-ASCII text passes through as is')
  const hostile = structuredClone(fixtureResult)
  const first = hostile.scenarios[0] as ScenarioResult
  first.title = '</text><script>alert("x")</script> & "quotes" \'too\' \u0007'
  first.id = 'a"b<c'
  const hostileSvg = renderSvg(hostile)
  t.same(xmlProblems(hostileSvg), [], 'still well-formed with markup, quotes and a control character in a title and an id')
  t.notMatch(hostileSvg, '<script', 'no element injected')
})

t.test('happy: the README summary and its block', async (t) => {
  const block = renderReadmeSummary(fixtureResult, { markdown: 'bench/results/latest.md', chart: 'bench/results/latest.svg' })
  t.match(block, /^Last run: 2026-03-02, full run \(10 s × 3 rounds, 64 connections\) on AMD EPYC 7B13, 2 cores, .*nginx absent\.\n/, 'one sentence: date, mode, machine')
  t.ok(block.includes(`\n\n${renderMainTable(fixtureResult)}\n\n`), 'the main table, as the report has it')
  t.match(block, 'Other targets: invalid-key flood ✅ · refreshes ≥ 20 × logins ✅ (49.81) · memory, final ≤ 1.2 × warm-up ✅ (1.13) · inflection rewriter ≥ 1.0 × `JSON.parse` ❌ (5 of 6 shapes, sizes and styles) · ' +
    'inflection event-loop block ≤ 10 ms ✅ (4.27 ms) · inflection streaming RSS ≤ 32 MiB ❌ (36.1 MiB).')
  t.match(block, 'Full report: [bench/results/latest.md](bench/results/latest.md) · chart: [bench/results/latest.svg](bench/results/latest.svg)')
  t.notMatch(renderReadmeSummary(withoutSections(fixtureResult), { markdown: 'a.md', chart: 'a.svg' }), 'Other targets', 'no line for targets that did not run')

  const readme = `# Portier\n\n## Benchmarks\n\n${README_START_MARKER}\nold table\n${README_END_MARKER}\n\n## Next\n`
  const replaced = replaceReadmeBlock(readme, block)
  t.equal(replaced, `# Portier\n\n## Benchmarks\n\n${README_START_MARKER}\n${block}${README_END_MARKER}\n\n## Next\n`, 'the block replaces the text between the markers, which stay')
  t.equal(replaceReadmeBlock(replaced, block), replaced, 'replacing again changes nothing')
  t.equal(replaceReadmeBlock(`${README_START_MARKER}${README_END_MARKER}`, 'x'), `${README_START_MARKER}\nx\n${README_END_MARKER}`, 'markers on one line')
})

t.test('error: replaceReadmeBlock refuses a README without a proper marker pair', async (t) => {
  t.throws(() => replaceReadmeBlock('# Portier\n', 'x'), { message: /README has no "<!-- bench:start -->" marker/ }, 'no markers')
  t.throws(() => replaceReadmeBlock(`${README_START_MARKER}\n`, 'x'), { message: /no "<!-- bench:end -->" marker/ }, 'no end marker')
  t.throws(() => replaceReadmeBlock(`${README_END_MARKER}\n${README_START_MARKER}\n`, 'x'), { message: /comes before/ }, 'out of order')
  t.throws(() => replaceReadmeBlock(`${README_START_MARKER}${README_END_MARKER}${README_START_MARKER}${README_END_MARKER}`, 'x'), { message: /more than once/ }, 'two pairs')
})

t.test('happy: writeReports names files by date and keeps latest.* on the newest run', async (t) => {
  const dir = join(tempDir(t, 'portier-bench-'), 'results')
  const first = await writeReports(fixtureResult, dir)
  t.same(first, { json: join(dir, '2026-03-02.json'), markdown: join(dir, '2026-03-02.md'), svg: join(dir, '2026-03-02.svg') }, 'named by the start date; the folder is created')
  t.same(JSON.parse(readFileSync(first.json, 'utf8')), fixtureResult, 'the JSON is the result')
  t.equal(readFileSync(first.markdown, 'utf8'), renderMarkdown(fixtureResult, { chartPath: '2026-03-02.svg' }), 'the report links its own chart by relative name')
  t.equal(readFileSync(first.svg, 'utf8'), renderSvg(fixtureResult))

  const later: BenchResult = { ...structuredClone(fixtureResult), startedAt: '2026-03-02T16:20:09.000Z', finishedAt: '2026-03-02T16:31:55.000Z' }
  const second = await writeReports(later, dir)
  t.same(second, { json: join(dir, '2026-03-02-162009.json'), markdown: join(dir, '2026-03-02-162009.md'), svg: join(dir, '2026-03-02-162009.svg') }, 'a second run the same day adds its start time')
  t.same(JSON.parse(readFileSync(first.json, 'utf8')), fixtureResult, 'the first run is not overwritten')
  const third = await writeReports(later, dir)
  t.equal(third.json, join(dir, '2026-03-02-162009-2.json'), 'a third in the same second adds a counter')

  for (const [kind, extension] of [['json', 'json'], ['markdown', 'md'], ['svg', 'svg']] as const) {
    t.equal(readFileSync(join(dir, `latest.${extension}`), 'utf8'), readFileSync(third[kind], 'utf8'), `latest.${extension} is a copy of the newest run`)
  }
  t.match(readFileSync(join(dir, 'latest.md'), 'utf8'), '](2026-03-02-162009-2.svg)', 'latest.md shows the newest chart')
  t.same(readdirSync(dir).filter((name) => name.endsWith('.tmp')), [], 'no temporary file is left')
  t.equal(readdirSync(dir).length, 12, 'three runs and the latest copies, nothing else')
})

t.test('error: writeReports refuses a result without a valid start and writes nothing', async (t) => {
  const dir = join(tempDir(t, 'portier-bench-'), 'results')
  const broken: BenchResult = { ...structuredClone(fixtureResult), startedAt: 'yesterday' }
  await t.rejects(writeReports(broken, dir), { message: /startedAt "yesterday" is not an ISO 8601 instant/ })
  t.ok(!existsSync(dir) || readdirSync(dir).length === 0, 'no file written')
})

// figures the assertions above rely on, so a change to the fixture fails loudly here
t.equal(formatRatio((fixtureResult.scenarios[1] as ScenarioResult).throughputRatio), '0.81', 'fixture: the JWT run is below its 0.85 target')
