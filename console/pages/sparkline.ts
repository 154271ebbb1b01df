import { html, type Html } from '../html.js'
import type { KeyUsage } from '../identity-client.js'
import { bucketLabel } from './usage-chart.js'

/**
 * A key's recent requests as a sparkline for a table cell: one line over the buckets,
 * drawn here as SVG with presentation attributes only (the CSP refuses `style=`), named
 * in words for screen readers and as a tooltip, with the total shown beside it.
 */

const WIDTH = 96
const HEIGHT = 24
/** Room for the stroke at the edges, so the top and bottom of the line are not clipped. */
const PAD = 2
// The chart's blue (4.5:1 on white); the baseline, the table's rule colour, is decoration only.
const LINE = '#0b57d0'
const BASELINE = '#c9ced6'

const requests = (count: number): string => count === 1 ? '1 request' : `${count} requests`

/** The busiest bucket, the latest of equals (the one the user most likely remembers); null when nothing was counted. */
function busiest (usage: KeyUsage): KeyUsage['buckets'][number] | null {
  let best: KeyUsage['buckets'][number] | null = null
  for (const bucket of usage.buckets) if (bucket.total > 0 && (best === null || bucket.total >= best.total)) best = bucket
  return best
}

/** The sparkline's text equivalent: "12 requests in the last 7 days, most on 2024-05-03 (9)". */
export function sparklineText (usage: KeyUsage, period: string): string {
  const top = busiest(usage)
  const most = top === null ? '' : `, most on ${bucketLabel(top.start, usage.step)} (${top.total})`
  return `${requests(usage.totals.total)} in ${period}${most}`
}

/** `id` must be unique on the page: the title that names the image is found by it. */
export function sparkline (usage: KeyUsage, options: { id: string, period: string }): Html {
  const max = Math.max(1, ...usage.buckets.map((b) => b.total))
  const last = Math.max(1, usage.buckets.length - 1)
  const points = usage.buckets.map((bucket, i) => {
    const x = PAD + (i / last) * (WIDTH - 2 * PAD)
    const y = HEIGHT - PAD - (bucket.total / max) * (HEIGHT - 2 * PAD)
    return `${x.toFixed(1)},${y.toFixed(1)}`
  }).join(' ')
  const titleId = `${options.id}-title`
  return html`<svg class="sparkline" width="${WIDTH}" height="${HEIGHT}" viewBox="0 0 ${WIDTH} ${HEIGHT}" role="img" aria-labelledby="${titleId}">
<title id="${titleId}">${sparklineText(usage, options.period)}</title>
<line x1="0" y1="${HEIGHT - PAD}" x2="${WIDTH}" y2="${HEIGHT - PAD}" stroke="${BASELINE}"/>
<polyline points="${points}" fill="none" stroke="${LINE}" stroke-width="1.5" stroke-linejoin="round"/>
</svg><span class="spark-total" aria-hidden="true">${usage.totals.total}</span>`
}
