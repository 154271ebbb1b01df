import { html, type Html } from '../html.js'

const UNITS: Array<[Intl.RelativeTimeFormatUnit, number]> = [['day', 86_400_000], ['hour', 3_600_000], ['minute', 60_000]]
const relative = new Intl.RelativeTimeFormat('en', { numeric: 'auto' })

/** `in 3 days`, `5 minutes ago`, against the console's clock. */
export function relativeTime (at: number, now: number): string {
  const delta = at - now
  for (const [unit, ms] of UNITS) if (Math.abs(delta) >= ms) return relative.format(Math.round(delta / ms), unit)
  return relative.format(Math.round(delta / 1000), 'second')
}

/** An instant as people read it (relative) and as machines and tooltips do (exact, UTC). */
export function timeCell (iso: string | null, now: number, none = 'never'): Html {
  if (iso === null) return html`${none}`
  const at = Date.parse(iso)
  const exact = new Date(at).toISOString().replace('T', ' ').replace(/\.\d+Z$/, ' UTC')
  return html`<time datetime="${iso}" title="${exact}">${relativeTime(at, now)}</time><span class="exact">${exact}</span>`
}
