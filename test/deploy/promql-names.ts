/** PromQL's words that are neither metrics nor functions. */
const KEYWORDS = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'bool', 'and', 'or', 'unless', 'offset', 'inf', 'nan'])

/**
 * The metric names a PromQL expression reads (as written: `x_bucket`, not `x`). Just
 * enough PromQL for dashboards: strings, label matchers, ranges and the label lists of
 * `by`/`without`/`on`/`ignoring`/`group_*` go first, then every identifier that is not
 * a function call or a keyword is a metric. `label_values(metric{…}, label)` (a Grafana
 * variable query) reads its first argument only.
 */
export function metricNames (expr: string): string[] {
  const stripped = expr
    .replace(/label_values\(\s*([a-zA-Z_:][\w:]*)?[^)]*\)/g, (_all, metric: string | undefined) => metric ?? '')
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, '""')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ')
    .replace(/\$\{?\w+\}?/g, ' ')
  const names = new Set<string>()
  for (const match of stripped.matchAll(/(?<![\w.])([a-zA-Z_:][\w:]*)(\s*\()?/g)) {
    const [, name, call] = match as unknown as [string, string, string | undefined]
    if (call !== undefined || KEYWORDS.has(name.toLowerCase())) continue
    names.add(name)
  }
  return [...names]
}

const HISTOGRAM_SERIES = /^(.*)_(bucket|sum|count)$/

/**
 * Why `name` is missing from a Prometheus text exposition, or null when a sample of it
 * is there. A histogram's `_bucket`, `_sum` and `_count` must be samples of a metric
 * declared as a histogram (or summary, for `_sum`/`_count`), not a counter that happens
 * to end so.
 */
export function missingFrom (exposition: string, name: string): string | null {
  const lines = exposition.split('\n')
  if (!lines.some((line) => line.startsWith(`${name}{`) || line.startsWith(`${name} `))) return `no sample of ${name}`
  const histogram = HISTOGRAM_SERIES.exec(name)
  if (histogram === null) return null
  const [, base, suffix] = histogram as unknown as [string, string, string]
  const type = new RegExp(`^# TYPE ${base} (\\w+)$`, 'm').exec(exposition)?.[1]
  if (type === 'histogram' || (type === 'summary' && suffix !== 'bucket')) return null
  // A plain metric whose own name ends so (none of Portier's do) is declared under its own name.
  if (new RegExp(`^# TYPE ${name} `, 'm').test(exposition)) return null
  return `${name} is read as a histogram series, but ${base} is ${type ?? 'not declared'}`
}
