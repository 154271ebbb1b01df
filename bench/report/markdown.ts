import { MIN_HEADROOM, type BenchResult, type FloodResult, type IdentityRates, type InflectionStreamResult, type MemoryResult, type MicroResult, type ScenarioResult, type Target, type VariantResult } from './types.js'
import {
  describeLoad, describeMachine, formatCount, formatElapsed, formatMBps, formatMicros, formatMiB, formatMs, formatNumber,
  formatRate, formatRatio, formatSignedMs, formatSlowRate, NOT_A_NUMBER, utcDate, utcTime
} from './format.js'

/**
 * The Markdown report of one bench run (`bench/results/<date>.md`), drawn only from
 * the `BenchResult`. Pure: no I/O, same input, same text.
 *
 * Every text that comes from the result (titles, labels, notes, machine strings) is
 * treated as Markdown inline text whose only markup is code spans (the targets write
 * `GET /users` in backticks): code spans are kept, everything else is escaped, so a
 * title with `<`, `&`, `*` or `|` cannot break the table or inject HTML.
 */

export interface MarkdownOptions {
  /** Path of the SVG chart relative to the Markdown file; the chart is embedded when given. */
  chartPath?: string
}

export const MET_MARK = '✅'
export const MISSED_MARK = '❌'
export const REPORTED_MARK = 'reported'
export const INVALID_MARK = '⚠ invalid'

// The targets for the parts whose result carries no target text of its own.
const FLOOD_TARGET = 'argon2 verifications/s never more than the negative cache allows'
const IDENTITY_TARGET = 'refreshes/s ≥ 20 × logins/s'
const MEMORY_TARGET = 'final RSS ≤ 1.2 × warm-up RSS'
const MICRO_TARGET = 'the rewriter renames at least as many MB/s as `JSON.parse` parses (ratio ≥ 1.00)'

export function metMark (met: boolean | null): string {
  if (met === null) return REPORTED_MARK
  return met ? MET_MARK : MISSED_MARK
}

/** Whether `target` has anything to judge, or only names what the ratio is taken against. */
export function hasChecks (target: Target): boolean {
  return target.minThroughputRatio !== undefined || target.maxP99ExcessMs !== undefined || target.maxCpuRatio !== undefined
}

/** A scenario's verdict: met, missed, reported (no target) or invalid (a target, not judged: too little headroom). */
export function verdictMark (scenario: ScenarioResult): string {
  if (!hasChecks(scenario.target)) return REPORTED_MARK
  if (!scenario.valid) return INVALID_MARK
  return metMark(scenario.met)
}

/** Direct ÷ bare proxy, flagged when below MIN_HEADROOM. */
export function formatHeadroom (headroom: number | null): string {
  if (headroom === null) return NOT_A_NUMBER
  return `${formatRatio(headroom)}${headroom < MIN_HEADROOM ? ' ⚠' : ''}`
}

/** Escapes Markdown outside code spans (see the module comment); `|` is escaped everywhere for table cells. */
export function markdownInline (text: string): string {
  // odd indices of the split are complete code spans, left as written
  const parts = text.replace(/\s*\r?\n\s*/g, ' ').split(/(`[^`]+`)/)
  return parts.map((part, index) => index % 2 === 1
    ? part.replaceAll('|', '\\|')
    : part
      .replace(/[\\`*_[\]~|#]/g, '\\$&')
      .replaceAll('&', '&amp;')
      .replaceAll('<', '&lt;')
      .replaceAll('>', '&gt;')
  ).join('')
}

/** A GFM table; `align` per column: 'l' or 'r' (numbers). Cells are already escaped. */
function table (header: string[], align: Array<'l' | 'r'>, rows: string[][]): string {
  const line = (cells: string[]): string => `| ${cells.join(' | ')} |`
  return [
    line(header),
    line(align.map((side) => side === 'r' ? '---:' : '---')),
    ...rows.map(line)
  ].join('\n')
}

function variantById (scenario: ScenarioResult, id: string): VariantResult | undefined {
  return scenario.variants.find((variant) => variant.id === id)
}

/** What the report says when no load scenario ran. */
export const NO_SCENARIOS = '_No load scenario ran._'

const cpuOf = (variant: VariantResult | undefined): string =>
  variant?.median.proxyCpuMicrosPerRequest === undefined ? NOT_A_NUMBER : formatMicros(variant.median.proxyCpuMicrosPerRequest)

/** One row per scenario: the judged candidate against the target's `against` variant. */
export function renderScenarioTable (scenarios: ScenarioResult[]): string {
  if (scenarios.length === 0) return NO_SCENARIOS
  const rows = scenarios.map((scenario) => {
    const candidate = variantById(scenario, scenario.candidate)
    const baseline = variantById(scenario, scenario.target.against)
    const p99 = candidate === undefined || baseline === undefined
      ? NOT_A_NUMBER
      : `${formatMs(candidate.median.p99Ms)} / ${formatMs(baseline.median.p99Ms)} (${formatSignedMs(scenario.p99ExcessMs)})`
    return [
      markdownInline(scenario.title),
      candidate === undefined ? NOT_A_NUMBER : formatRate(candidate.median.requestsPerSecond),
      baseline === undefined ? NOT_A_NUMBER : formatRate(baseline.median.requestsPerSecond),
      formatRatio(scenario.throughputRatio),
      candidate?.floorRatio === undefined ? NOT_A_NUMBER : formatRatio(candidate.floorRatio),
      `${cpuOf(candidate)} / ${cpuOf(baseline)} (${formatRatio(scenario.cpuRatio)})`,
      p99,
      formatHeadroom(scenario.headroom),
      markdownInline(scenario.target.description),
      verdictMark(scenario)
    ]
  })
  return table(
    ['scenario', 'candidate req/s', 'baseline req/s', 'ratio', '× node floor', 'CPU µs/req candidate / baseline (ratio)', 'p99 candidate / baseline ms (excess)', 'headroom (direct ÷ bare)', 'target', 'met'],
    ['l', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'l', 'l'],
    rows
  )
}

/** The main table: the scenarios against the static upstream. Shared by the report and the README summary. */
export function renderMainTable (result: BenchResult): string {
  return renderScenarioTable(result.scenarios)
}

/** One sentence naming the run and the machine, e.g. for the README. */
export function describeRun (result: BenchResult): string {
  return `${utcDate(result.startedAt)}, ${result.settings.mode} run (${describeLoad(result.settings)}) on ${describeMachine(result.machine)}`
}

function renderHeading (result: BenchResult): string {
  const { settings } = result
  return [
    `# Portier benchmark, ${utcDate(result.startedAt)} (${settings.mode} run)`,
    '',
    `Started ${utcDate(result.startedAt)} ${utcTime(result.startedAt)} UTC, took ${formatElapsed(result)}.`,
    '',
    `- **Machine:** ${markdownInline(describeMachine(result.machine))}`,
    `- **Settings:** ${describeLoad(settings)}; every figure is the median of ${settings.rounds} alternating rounds (baseline, candidate, baseline, …), and every ratio the median of the per-round ratios`,
    `- **Load generator:** ${markdownInline(settings.loadGenerator)}`,
    `- **Keys:** ${formatCount(settings.keysInIdentity)} in identity, ${formatCount(settings.distinctKeysInTraffic)} distinct in traffic`
  ].join('\n')
}

/** A link destination: spaces and brackets percent-encoded so any file name stays one destination. */
export function markdownLinkDestination (path: string): string {
  return path.replace(/[ ()<>]/g, (char) => `%${char.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`)
}

function renderVariantTable (scenarios: ScenarioResult[]): string {
  const rows: string[][] = []
  for (const scenario of scenarios) {
    scenario.variants.forEach((variant, index) => {
      const rates = variant.rounds.map((round) => round.requestsPerSecond)
      const range = rates.length === 0 ? NOT_A_NUMBER : `${formatRate(Math.min(...rates))}–${formatRate(Math.max(...rates))}`
      rows.push([
        index === 0 ? markdownInline(scenario.title) : '',
        `${markdownInline(variant.label)} (${markdownInline(`\`${variant.id}\``)})`,
        variant.role,
        formatRate(variant.median.requestsPerSecond),
        range,
        formatMs(variant.median.p50Ms),
        formatMs(variant.median.p99Ms),
        formatCount(variant.median.non2xx),
        formatCount(variant.median.errors),
        formatCount(variant.median.timeouts),
        cpuOf(variant),
        variant.floorRatio !== undefined ? formatRatio(variant.floorRatio) : NOT_A_NUMBER
      ])
    })
  }
  return [
    '## Every variant',
    '',
    'Medians over the rounds; the range shows how far the rounds spread. Proxy CPU is the CPU time the proxy (the process and its descendants: nginx\'s workers, a gateway\'s) spent per answered request, from /proc: the machine\'s noise moves it much less than throughput. × node floor is the median of the per-round ratios to the node floor, where it ran in the same rotation.',
    '',
    table(
      ['scenario', 'variant', 'role', 'median req/s', 'rounds req/s (min–max)', 'p50 ms', 'p99 ms', 'non-2xx', 'errors', 'timeouts', 'proxy CPU µs/req', '× node floor'],
      ['l', 'l', 'l', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r'],
      rows
    )
  ].join('\n')
}

/** Scenario notes, plus a warning for every variant whose rounds saw a non-2xx, an error or a timeout. */
function renderNotes (scenarios: ScenarioResult[]): string {
  const lines: string[] = []
  for (const scenario of scenarios) {
    if (hasChecks(scenario.target) && !scenario.valid) {
      lines.push(`- ⚠ ${markdownInline(scenario.title)}: not judged: direct ran at ${formatRatio(scenario.headroom ?? Number.NaN)} × the bare proxy, less than ${MIN_HEADROOM} ×, so the upstream or the load generator, not the proxies, set the pace`)
    }
    for (const note of scenario.notes) lines.push(`- ${markdownInline(scenario.title)}: ${markdownInline(note)}`)
    for (const variant of scenario.variants) {
      const sum = (field: 'non2xx' | 'errors' | 'timeouts'): number => variant.rounds.reduce((total, round) => total + round[field], 0)
      const [non2xx, errors, timeouts] = [sum('non2xx'), sum('errors'), sum('timeouts')]
      if (non2xx + errors + timeouts === 0) continue
      lines.push(`- ⚠ ${markdownInline(scenario.title)}: ${markdownInline(variant.label)} saw ` +
        `${formatCount(non2xx)} non-2xx, ${formatCount(errors)} errors, ${formatCount(timeouts)} timeouts over ${variant.rounds.length} rounds`)
    }
  }
  return lines.length === 0 ? '' : ['## Notes', '', ...lines].join('\n')
}

function renderFlood (flood: FloodResult | null): string {
  if (flood === null) return ''
  return [
    '## Invalid-key flood',
    '',
    `Random well-formed keys: ${formatCount(flood.distinctKeys)} distinct, ${formatCount(flood.unknownIds)} of them with lookup ids identity does not know; ` +
      `${formatNumber(flood.durationSeconds, 0)} s at ${formatRate(flood.requestsPerSecond)} req/s.`,
    '',
    table(
      ['non-401 answers', 'identity verifications/s', 'argon2 verifications/s', 'allowed by the negative cache /s', 'identity CPU (cores)', 'target', 'met'],
      ['r', 'r', 'r', 'r', 'r', 'l', 'l'],
      [[
        formatCount(flood.non401),
        formatSlowRate(flood.identityVerificationsPerSecond),
        formatSlowRate(flood.argon2VerificationsPerSecond),
        formatSlowRate(flood.allowedVerificationsPerSecond),
        formatRatio(flood.identityCpuCores),
        FLOOD_TARGET,
        metMark(flood.met)
      ]]
    )
  ].join('\n')
}

function renderIdentity (identity: IdentityRates | null): string {
  if (identity === null) return ''
  const { memoryKiB, timeCost, parallelism } = identity.argon2
  return [
    '## Login and refresh',
    '',
    `\`POST /sessions\` (argon2id, ${formatCount(memoryKiB)} KiB, t=${timeCost}, p=${parallelism}) against \`POST /tokens\`.`,
    '',
    table(
      ['logins/s', 'refreshes/s', 'refreshes / logins', 'target', 'met'],
      ['r', 'r', 'r', 'l', 'l'],
      [[formatSlowRate(identity.loginsPerSecond), formatSlowRate(identity.refreshesPerSecond), formatRatio(identity.ratio), IDENTITY_TARGET, metMark(identity.met)]]
    )
  ].join('\n')
}

function renderMemory (memory: MemoryResult | null): string {
  if (memory === null) return ''
  return [
    '## Gateway memory',
    '',
    table(
      ['warm-up RSS MiB', 'final RSS MiB', 'peak RSS MiB', 'final / warm-up', 'target', 'met'],
      ['r', 'r', 'r', 'r', 'l', 'l'],
      [[formatMiB(memory.warmupRssMiB), formatMiB(memory.finalRssMiB), formatMiB(memory.peakRssMiB), formatRatio(memory.ratio), MEMORY_TARGET, metMark(memory.met)]]
    )
  ].join('\n')
}

function renderMicro (micro: MicroResult[]): string {
  if (micro.length === 0) return ''
  return [
    '## Inflection micro-benchmark',
    '',
    `No network; MB/s of input body; ratio is rewriter ÷ \`JSON.parse\` MB/s, the median of the per-round ratios. Target: ${markdownInline(MICRO_TARGET)}. ` +
      '`JSON.parse(buffer.toString())`, decoding included, is shown beside it, not judged.',
    '',
    table(
      ['shape', 'size', 'style', '`JSON.parse` MB/s', '`JSON.parse(buffer.toString())` MB/s', 'rewriter MB/s', 'ratio', 'met'],
      ['l', 'l', 'l', 'r', 'r', 'r', 'r', 'l'],
      micro.map((row) => [
        markdownInline(row.shape),
        markdownInline(row.size),
        markdownInline(row.style),
        formatMBps(row.parseMBps),
        formatMBps(row.decodeParseMBps),
        formatMBps(row.rewriteMBps),
        formatRatio(row.ratio),
        metMark(row.met)
      ])
    )
  ].join('\n')
}

/** The event-loop and memory targets of the rewriter streaming a large body. */
function renderInflectionStream (stream: InflectionStreamResult | null): string {
  if (stream === null) return ''
  const { eventLoop, memory } = stream
  const MB = 1024 * 1024
  return [
    '## Inflection, streaming',
    '',
    table(
      ['what', 'measured', 'target', 'met'],
      ['l', 'r', 'l', 'l'],
      [
        [
          `longest synchronous push while ${formatNumber(eventLoop.passes, 0)} bodies of ${formatMiB(eventLoop.bodyBytes / MB)} MB are renamed in ${formatNumber(eventLoop.chunkBytes / 1024, 0)} KiB chunks, one per macrotask (${formatCount(eventLoop.pushes)} pushes, median ${formatNumber(eventLoop.medianPushMs, 3)} ms, most CPU time in one push ${formatMs(eventLoop.longestPushCpuMs)} ms; event-loop delay max ${formatMs(eventLoop.loopDelayMaxMs)} ms, p99 ${formatMs(eventLoop.loopDelayP99Ms)} ms, not judged)`,
          `${formatMs(eventLoop.longestPushMs)} ms`,
          `≤ ${formatNumber(eventLoop.maxBlockMs, 0)} ms`,
          metMark(eventLoop.met)
        ],
        [
          `RSS growth of a process streaming ${formatNumber(memory.bodyBytes / MB, 0)} MB to ${markdownInline(memory.style)} through one rewriter, output dropped (before ${formatMiB(memory.rssBeforeMiB)}, peak ${formatMiB(memory.rssPeakMiB)}, final ${formatMiB(memory.rssFinalMiB)} MiB; retained after a full collection ${formatMiB(memory.retainedMiB)} MiB, not judged)`,
          `${formatMiB(memory.growthMiB)} MiB`,
          `≤ ${formatNumber(memory.maxGrowthMiB, 0)} MiB`,
          metMark(memory.met)
        ]
      ]
    )
  ].join('\n')
}

const SCENARIOS_INTRO = 'Against the static upstream (precomputed bodies, plain node:http), so that the proxies are the bottleneck. ' +
  `Headroom is direct ÷ bare proxy: below ${MIN_HEADROOM} ×, the upstream or the load generator sets the pace and the scenario is marked invalid, not judged.`

function renderRealistic (realistic: ScenarioResult[]): string {
  if (realistic.length === 0) return ''
  return [
    '## Realistic upstream',
    '',
    'Against upstream-mock, which builds every page per request: what a client of a real back office would see. The mock sets the pace, so nothing here is judged.',
    '',
    renderScenarioTable(realistic)
  ].join('\n')
}

function renderSkipped (skipped: string[]): string {
  if (skipped.length === 0) return ''
  return ['## Skipped', '', ...skipped.map((line) => `- ${markdownInline(line)}`)].join('\n')
}

/** The full Markdown report of `result`; ends with a newline. */
export function renderMarkdown (result: BenchResult, options: MarkdownOptions = {}): string {
  const sections = [
    renderHeading(result),
    options.chartPath === undefined ? '' : `![throughput, p99 and proxy CPU per scenario](${markdownLinkDestination(options.chartPath)})`,
    `## Scenarios\n\n${result.scenarios.length === 0 ? '' : `${SCENARIOS_INTRO}\n\n`}${renderMainTable(result)}`,
    renderRealistic(result.realistic),
    result.scenarios.length + result.realistic.length === 0 ? '' : renderVariantTable([...result.scenarios, ...result.realistic]),
    renderNotes([...result.scenarios, ...result.realistic]),
    renderFlood(result.flood),
    renderIdentity(result.identity),
    renderMemory(result.memory),
    renderMicro(result.micro),
    renderInflectionStream(result.inflectionStream),
    renderSkipped(result.skipped)
  ]
  return `${sections.filter((section) => section !== '').join('\n\n')}\n`
}
