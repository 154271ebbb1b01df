import { html, type Html } from '../html.js'
import type { KeyUsage, UsageCounts } from '../identity-client.js'

/**
 * A key's usage as a stacked bar chart, drawn here as SVG (no script, no chart
 * library, nothing inline for the CSP to refuse), and the same numbers as a table for
 * those who do not see the chart. Upstream errors are among the allowed requests, so
 * a bar stacks the allowed ones the upstream answered well, the upstream errors, then
 * the refusals: its height is the bucket's total.
 */

interface Series { label: string, fill: string, count: (c: UsageCounts) => number }

// Each colour has at least 4.5:1 against the white page (AA for text too, so the legend's swatches need no outline).
const SERIES: readonly Series[] = [
  { label: 'allowed', fill: '#1e6b34', count: (c) => c.allowed - c.upstream_error },
  { label: 'upstream error', fill: '#0b57d0', count: (c) => c.upstream_error },
  { label: 'forbidden', fill: '#a4161a', count: (c) => c.forbidden },
  { label: 'rate limited', fill: '#7a4b00', count: (c) => c.rate_limited },
  { label: 'quota exhausted', fill: '#6a1b9a', count: (c) => c.quota_exhausted }
]

const WIDTH = 720
const HEIGHT = 200
const AXIS = 40

/** A bucket's start as the chart and table name it: the hour, or the day (UTC). */
export function bucketLabel (start: string, step: KeyUsage['step']): string {
  return step === 'hour' ? `${start.slice(0, 10)} ${start.slice(11, 16)} UTC` : start.slice(0, 10)
}

function summary (counts: UsageCounts): string {
  return `${counts.total} requests: ${counts.allowed} allowed (${counts.upstream_error} upstream errors), ${counts.forbidden} forbidden, ${counts.rate_limited} rate limited, ${counts.quota_exhausted} quota exhausted`
}

export function usageChart (usage: KeyUsage, period: string): Html {
  const max = Math.max(1, ...usage.buckets.map((b) => b.total))
  const slot = (WIDTH - AXIS) / Math.max(1, usage.buckets.length)
  const bar = Math.max(1, slot * 0.8)
  const bars = usage.buckets.map((bucket, i) => {
    let top = HEIGHT
    const x = (AXIS + i * slot).toFixed(1)
    const parts = SERIES.map((series) => {
      const height = (series.count(bucket) / max) * HEIGHT
      top -= height
      return height > 0 ? html`<rect x="${x}" y="${top.toFixed(1)}" width="${bar.toFixed(1)}" height="${height.toFixed(1)}" fill="${series.fill}"/>` : ''
    })
    return html`<g><title>${bucketLabel(bucket.start, usage.step)}: ${summary(bucket)}</title><rect x="${x}" y="0" width="${bar.toFixed(1)}" height="${HEIGHT}" fill="transparent"/>${parts}</g>`
  })
  const label = `Requests with this key, ${period}, per ${usage.step}: ${summary(usage.totals)}`
  return html`<figure class="usage">
<svg class="usage-chart" viewBox="0 0 ${WIDTH} ${HEIGHT + 1}" role="img" aria-label="${label}">
<title>${label}</title>
<line x1="${AXIS}" y1="${HEIGHT}" x2="${WIDTH}" y2="${HEIGHT}" stroke="#4a5260"/>
<text x="0" y="12" class="axis">${max}</text><text x="0" y="${HEIGHT}" class="axis">0</text>
${bars}
</svg>
<figcaption><ul class="legend">${SERIES.map((series) => html`<li><svg class="swatch" viewBox="0 0 10 10" aria-hidden="true"><rect width="10" height="10" fill="${series.fill}"/></svg>${series.label}</li>`)}</ul></figcaption>
</figure>`
}

export function usageTable (usage: KeyUsage, period: string): Html {
  const row = (head: Html | string, counts: UsageCounts): Html => html`<tr><th scope="row">${head}</th><td>${counts.allowed}</td><td>${counts.forbidden}</td><td>${counts.rate_limited}</td><td>${counts.quota_exhausted}</td><td>${counts.upstream_error}</td><td>${counts.total}</td></tr>`
  return html`<div class="table-wrap"><table id="usage">
<caption>Requests with this key, ${period}, per ${usage.step} (upstream errors are among the allowed)</caption>
<thead><tr><th scope="col">${usage.step === 'hour' ? 'Hour' : 'Day'}</th><th scope="col">Allowed</th><th scope="col">Forbidden</th><th scope="col">Rate limited</th><th scope="col">Quota exhausted</th><th scope="col">Upstream errors</th><th scope="col">Total</th></tr></thead>
<tbody>
${usage.buckets.map((bucket) => row(bucketLabel(bucket.start, usage.step), bucket))}
</tbody>
<tfoot>${row('All', usage.totals)}</tfoot>
</table></div>`
}
