import type { BenchResult } from './types.js'
import { formatMiB, formatMs, formatRatio } from './format.js'
import { describeRun, markdownInline, markdownLinkDestination, metMark, renderMainTable } from './markdown.js'

/**
 * The block the README shows between its bench markers: which run, on what machine,
 * the main table (the same function the full report uses), one line for the targets
 * that are not load scenarios, and links to the full report and the chart.
 */

export const README_START_MARKER = '<!-- bench:start -->'
export const README_END_MARKER = '<!-- bench:end -->'

export interface SummaryLinks {
  /** Link to the full Markdown report, relative to the README. */
  markdown: string
  /** Link to the SVG chart, relative to the README. */
  chart: string
}

/** The other targets in one line, e.g. "invalid-key flood ✅ · memory ✅ (1.12)"; '' when none ran. */
function otherTargets (result: BenchResult): string {
  const items: string[] = []
  if (result.flood !== null) items.push(`invalid-key flood ${metMark(result.flood.met)}`)
  if (result.identity !== null) items.push(`refreshes ≥ 20 × logins ${metMark(result.identity.met)} (${formatRatio(result.identity.ratio)})`)
  if (result.memory !== null) items.push(`memory, final ≤ 1.2 × warm-up ${metMark(result.memory.met)} (${formatRatio(result.memory.ratio)})`)
  if (result.micro.length > 0) {
    const met = result.micro.filter((row) => row.met).length
    items.push(`inflection rewriter ≥ 1.0 × \`JSON.parse\` ${metMark(met === result.micro.length)} (${met} of ${result.micro.length} shapes, sizes and styles)`)
  }
  if (result.inflectionStream !== null) {
    const { eventLoop, memory } = result.inflectionStream
    items.push(`inflection event-loop block ≤ ${eventLoop.maxBlockMs} ms ${metMark(eventLoop.met)} (${formatMs(eventLoop.longestPushMs)} ms)`)
    items.push(`inflection streaming RSS ≤ ${memory.maxGrowthMiB} MiB ${metMark(memory.met)} (${formatMiB(memory.growthMiB)} MiB)`)
  }
  return items.length === 0 ? '' : `Other targets: ${items.join(' · ')}.`
}

/** The README block for `result` (without the markers); ends with a newline. */
export function renderReadmeSummary (result: BenchResult, links: SummaryLinks): string {
  const parts = [
    `Last run: ${markdownInline(describeRun(result))}.`,
    renderMainTable(result),
    otherTargets(result),
    `Full report: [${markdownInline(links.markdown)}](${markdownLinkDestination(links.markdown)}) · chart: [${markdownInline(links.chart)}](${markdownLinkDestination(links.chart)})`
  ]
  return `${parts.filter((part) => part !== '').join('\n\n')}\n`
}

function markerIndex (readme: string, marker: string): number {
  const index = readme.indexOf(marker)
  if (index === -1) {
    throw new Error(`README has no "${marker}" marker: add the lines "${README_START_MARKER}" and "${README_END_MARKER}" where the bench summary belongs`)
  }
  if (readme.indexOf(marker, index + marker.length) !== -1) {
    throw new Error(`README has "${marker}" more than once: keep one "${README_START_MARKER}" … "${README_END_MARKER}" pair`)
  }
  return index
}

/**
 * `readme` with the text between `<!-- bench:start -->` and `<!-- bench:end -->`
 * replaced by `block`; the markers stay. Throws when a marker is missing, repeated or
 * the end comes before the start, so a README is never half rewritten.
 */
export function replaceReadmeBlock (readme: string, block: string): string {
  const start = markerIndex(readme, README_START_MARKER)
  const end = markerIndex(readme, README_END_MARKER)
  if (end < start) {
    throw new Error(`README's "${README_END_MARKER}" comes before "${README_START_MARKER}": put the start marker first`)
  }
  const body = block.replace(/^\n+|\n+$/g, '')
  return `${readme.slice(0, start + README_START_MARKER.length)}\n${body === '' ? '' : `${body}\n`}${readme.slice(end)}`
}
