import { MIN_HEADROOM, type BenchResult, type ScenarioResult, type VariantResult } from './types.js'
import { describeLoad, describeMachine, formatMicros, formatMs, formatNumber, formatRate, formatRatio, utcDate } from './format.js'

/**
 * The SVG chart of one bench run: median throughput, median p99 and median proxy CPU
 * per request (one panel each) per scenario, the realistic-upstream ones last, one
 * horizontal bar per variant, coloured by role. A scenario not judged for want of
 * headroom says so in its title.
 *
 * Self-contained (no fonts, scripts, styles or images from elsewhere), drawn on a white
 * background so it stays readable on a dark page, and deterministic: coordinates are
 * rounded to a tenth of a pixel and nothing depends on the clock or on measuring text.
 * Text widths are estimated, so long texts are shortened with "…" rather than clipped.
 * Each bar carries `data-panel`, `data-scenario` and `data-variant`, and a `<title>`
 * with its figure, for readers and tests alike.
 */

const WIDTH = 900
const MARGIN = 16
/** Variant labels end here (right-aligned); bars start a little after. */
const LABEL_END_X = 262
const PLOT_START_X = 270
/** Room right of the longest bar for its value. */
const PLOT_END_X = WIDTH - 84
const BAR_HEIGHT = 14
const BAR_GAP = 4
const GROUP_TITLE_HEIGHT = 22
const GROUP_GAP = 10
const PANEL_TITLE_HEIGHT = 30
const AXIS_HEIGHT = 44
/** Average advance of a character of the sans-serif stack at 1 px font size, used to shorten texts. */
const CHAR_WIDTH_EM = 0.56
const FONT_FAMILY = 'system-ui, -apple-system, \'Segoe UI\', Roboto, \'Helvetica Neue\', Arial, sans-serif'
const TEXT_COLOUR = '#1f2933'
const MUTED_COLOUR = '#52606d'
const GRID_COLOUR = '#e4e7eb'

type Role = VariantResult['role']

const ROLE_COLOURS: Record<Role, string> = {
  candidate: '#2f6fb3',
  baseline: '#8a96a3',
  reference: '#d9892b'
}
const ROLE_ORDER: Role[] = ['candidate', 'baseline', 'reference']

interface Panel {
  id: 'throughput' | 'p99' | 'cpu'
  title: string
  axisLabel: string
  value: (variant: VariantResult) => number
  format: (value: number) => string
  unit: string
}

/** Escapes text for XML content and attribute values, and drops characters XML 1.0 forbids. */
export function escapeXml (text: string): string {
  return text
    // Control characters are what this removes: XML 1.0 does not allow them.
    // eslint-disable-next-line no-control-regex
    .replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]/g, '')
    .replaceAll('&', '&amp;')
    .replaceAll('<', '&lt;')
    .replaceAll('>', '&gt;')
    .replaceAll('"', '&quot;')
    .replaceAll('\'', '&apos;')
}

/** Plain text for the chart: code-span backticks dropped, whitespace folded. */
function plain (text: string): string {
  return text.replace(/`([^`]+)`/g, '$1').replace(/\s+/g, ' ').trim()
}

/** `text` shortened with "…" to fit `widthPx` at `fontPx` (estimated). */
function fit (text: string, widthPx: number, fontPx: number): string {
  const max = Math.max(1, Math.floor(widthPx / (fontPx * CHAR_WIDTH_EM)))
  const chars = Array.from(text)
  return chars.length <= max ? text : `${chars.slice(0, max - 1).join('').trimEnd()}…`
}

const px = (value: number): string => String(Math.round(value * 10) / 10)

function textElement (x: number, y: number, content: string, attributes = ''): string {
  return `<text x="${px(x)}" y="${px(y)}"${attributes === '' ? '' : ` ${attributes}`}>${escapeXml(content)}</text>`
}

/** A round step giving about five ticks from 0 to `max`, and the axis end it implies. */
function axisScale (max: number): { step: number, end: number } {
  if (!Number.isFinite(max) || max <= 0) return { step: 0.2, end: 1 }
  const raw = max / 5
  const magnitude = 10 ** Math.floor(Math.log10(raw))
  const step = ([1, 2, 2.5, 5, 10].find((m) => m * magnitude >= raw) ?? 10) * magnitude
  return { step, end: Math.ceil(max / step - 1e-9) * step }
}

function decimalsFor (step: number): number {
  let decimals = 0
  while (decimals < 6 && Math.abs(Math.round(step * 10 ** decimals) - step * 10 ** decimals) > 1e-9) decimals++
  return decimals
}

function finiteOrZero (value: number): number {
  return Number.isFinite(value) && value > 0 ? value : 0
}

function renderPanel (panel: Panel, scenarios: ScenarioResult[], top: number, rounds: number): { svg: string, height: number } {
  const parts: string[] = []
  parts.push(`<g data-panel="${panel.id}">`)
  parts.push(textElement(MARGIN, top + 20, panel.title, 'font-size="16" font-weight="600"'))

  const groupsTop = top + PANEL_TITLE_HEIGHT
  const groupsHeight = scenarios.reduce((height, scenario) =>
    height + GROUP_TITLE_HEIGHT + scenario.variants.length * (BAR_HEIGHT + BAR_GAP) + GROUP_GAP, 0)
  const axisY = groupsTop + groupsHeight
  const max = Math.max(0, ...scenarios.flatMap((scenario) => scenario.variants.map((variant) => finiteOrZero(panel.value(variant)))))
  const { step, end } = axisScale(max)
  const xOf = (value: number): number => PLOT_START_X + (finiteOrZero(value) / end) * (PLOT_END_X - PLOT_START_X)
  const tickDecimals = decimalsFor(step)

  const tickXs = Array.from({ length: Math.round(end / step) + 1 }, (_, index) => xOf(index * step))
  tickXs.forEach((x, index) => {
    parts.push(textElement(x, axisY + 16, formatNumber(index * step, tickDecimals), `font-size="11" fill="${MUTED_COLOUR}" text-anchor="middle"`))
  })
  parts.push(`<line x1="${px(PLOT_START_X)}" y1="${px(axisY)}" x2="${px(PLOT_END_X)}" y2="${px(axisY)}" stroke="${MUTED_COLOUR}" stroke-width="1"/>`)
  parts.push(textElement((PLOT_START_X + PLOT_END_X) / 2, axisY + 36,
    `${panel.axisLabel} (median of ${rounds} ${rounds === 1 ? 'round' : 'rounds'})`,
    `font-size="12" fill="${TEXT_COLOUR}" text-anchor="middle"`))

  let y = groupsTop
  for (const scenario of scenarios) {
    parts.push(textElement(MARGIN, y + 15, fit(groupTitle(scenario), WIDTH - 2 * MARGIN, 13), 'font-size="13" font-weight="600"'))
    y += GROUP_TITLE_HEIGHT
    // grid behind this group's bars only, so no line runs through a scenario title
    const gridBottom = scenario === scenarios.at(-1) ? axisY : y + scenario.variants.length * (BAR_HEIGHT + BAR_GAP)
    for (const x of tickXs.slice(1)) {
      parts.push(`<line x1="${px(x)}" y1="${px(y - BAR_GAP)}" x2="${px(x)}" y2="${px(gridBottom)}" stroke="${GRID_COLOUR}" stroke-width="1"/>`)
    }
    parts.push(`<line x1="${px(PLOT_START_X)}" y1="${px(y - BAR_GAP)}" x2="${px(PLOT_START_X)}" y2="${px(gridBottom)}" stroke="${MUTED_COLOUR}" stroke-width="1"/>`)
    for (const variant of scenario.variants) {
      const value = panel.value(variant)
      const barEnd = xOf(value)
      const label = plain(variant.label)
      const valueText = Number.isFinite(value) ? panel.format(value) : panel.format(Number.NaN)
      parts.push(textElement(LABEL_END_X, y + BAR_HEIGHT - 3, fit(label, LABEL_END_X - MARGIN, 12), `font-size="12" fill="${TEXT_COLOUR}" text-anchor="end"`))
      parts.push(
        `<rect class="bar" data-panel="${panel.id}" data-scenario="${escapeXml(scenario.id)}" data-variant="${escapeXml(variant.id)}" ` +
        `x="${px(PLOT_START_X)}" y="${px(y)}" width="${px(barEnd - PLOT_START_X)}" height="${BAR_HEIGHT}" fill="${ROLE_COLOURS[variant.role]}">` +
        `<title>${escapeXml(`${plain(scenario.title)}, ${label} (${variant.role}): ${valueText} ${panel.unit}`)}</title></rect>`
      )
      parts.push(textElement(barEnd + 4, y + BAR_HEIGHT - 3, valueText, `font-size="11" fill="${TEXT_COLOUR}"`))
      y += BAR_HEIGHT + BAR_GAP
    }
    y += GROUP_GAP
  }
  parts.push('</g>')
  return { svg: parts.join('\n'), height: PANEL_TITLE_HEIGHT + groupsHeight + AXIS_HEIGHT }
}

/** The scenario's title, and why it is not judged when its headroom is too small. */
function groupTitle (scenario: ScenarioResult): string {
  const title = plain(scenario.title)
  if (scenario.valid || scenario.headroom === null) return title
  return `${title} (invalid: headroom ${formatRatio(scenario.headroom)} × < ${MIN_HEADROOM} ×)`
}

function renderLegend (roles: Role[], top: number): string {
  const parts = ['<g data-legend="roles">']
  let x = MARGIN
  for (const role of roles) {
    parts.push(`<rect x="${px(x)}" y="${px(top)}" width="12" height="12" fill="${ROLE_COLOURS[role]}"/>`)
    parts.push(textElement(x + 17, top + 10.5, role, `font-size="12" fill="${TEXT_COLOUR}"`))
    x += 17 + role.length * 12 * CHAR_WIDTH_EM + 22
  }
  parts.push('</g>')
  return parts.join('\n')
}

const PANELS: Panel[] = [
  { id: 'throughput', title: 'Throughput, requests per second (higher is better)', axisLabel: 'requests per second', value: (variant) => variant.median.requestsPerSecond, format: formatRate, unit: 'req/s' },
  { id: 'p99', title: 'Latency, p99 in milliseconds (lower is better)', axisLabel: 'p99 latency, ms', value: (variant) => variant.median.p99Ms, format: formatMs, unit: 'ms' },
  {
    id: 'cpu',
    title: 'Proxy CPU per request, µs (lower is better)',
    axisLabel: 'proxy CPU µs per request',
    value: (variant) => variant.median.proxyCpuMicrosPerRequest ?? Number.NaN,
    format: formatMicros,
    unit: 'µs/req'
  }
]

/** The chart of `result` as a standalone SVG document; ends with a newline. */
export function renderSvg (result: BenchResult): string {
  const heading = `Portier benchmark, ${utcDate(result.startedAt)} (${result.settings.mode} run)`
  const header = [
    textElement(MARGIN, 28, fit(heading, WIDTH - 2 * MARGIN, 18), 'font-size="18" font-weight="700"'),
    textElement(MARGIN, 48, fit(describeMachine(result.machine), WIDTH - 2 * MARGIN, 12), `font-size="12" fill="${MUTED_COLOUR}"`),
    textElement(MARGIN, 64, fit(describeLoad(result.settings), WIDTH - 2 * MARGIN, 12), `font-size="12" fill="${MUTED_COLOUR}"`)
  ]
  const scenarios = [...result.scenarios, ...result.realistic]
  const roles = ROLE_ORDER.filter((role) => scenarios.some((scenario) => scenario.variants.some((variant) => variant.role === role)))
  let top = 76
  const body: string[] = []
  if (roles.length > 0) {
    body.push(renderLegend(roles, top))
    top += 24
  }
  if (scenarios.length === 0) {
    body.push(textElement(MARGIN, top + 20, 'No load scenario ran.', `font-size="14" fill="${TEXT_COLOUR}"`))
    top += 40
  } else {
    for (const panel of PANELS) {
      const rendered = renderPanel(panel, scenarios, top, result.settings.rounds)
      body.push(rendered.svg)
      top += rendered.height + 12
    }
  }
  const height = Math.ceil(top + MARGIN)
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}" ` +
      `role="img" aria-labelledby="chart-title" font-family="${escapeXml(FONT_FAMILY)}" fill="${TEXT_COLOUR}">`,
    `<title id="chart-title">${escapeXml(`${heading}: throughput, p99 and proxy CPU per scenario`)}</title>`,
    `<rect x="0" y="0" width="${WIDTH}" height="${height}" fill="#ffffff"/>`,
    ...header,
    ...body,
    '</svg>'
  ].join('\n') + '\n'
}
