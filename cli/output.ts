import type { ProblemBody } from '../common/problem.js'

/**
 * How commands print their answer on stdout. JSON (the default) is exactly what the
 * matching admin API route answers, pretty-printed; `table` is for people.
 */
export type OutputFormat = 'json' | 'table'
export const OUTPUT_FORMATS: readonly OutputFormat[] = ['json', 'table']

export interface Answer {
  /** The admin API's answer body, e.g. `{ user: {...} }` or `{ api_keys: [...] }`. */
  body: Record<string, unknown>
  /** Columns of list tables, by member name (e.g. `api_keys`); other members show every scalar field. */
  columns?: Record<string, readonly string[]>
  /** Set when the answer reports a failure (a broken audit chain): printed, then the command exits 1 with this line. */
  failure?: string
}

const NONE = '-'
// C0/C1 controls and DEL would let a stored value (a user agent, say) drive the terminal.
// eslint-disable-next-line no-control-regex -- matching them is the point
const CONTROL_CHARACTERS = /[\u0000-\u001f\u007f-\u009f]/g

function cell (value: unknown): string {
  if (value === null || value === undefined) return NONE
  if (Array.isArray(value)) {
    if (value.length === 0) return NONE
    return value.every((v) => typeof v !== 'object' || v === null) ? value.map(cell).join(',') : JSON.stringify(value)
  }
  const text = typeof value === 'object' ? JSON.stringify(value) : String(value)
  return text.replace(CONTROL_CHARACTERS, '?')
}

function isRecord (value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

function grid (rows: string[][]): string {
  const widths = rows[0]?.map((_h, i) => Math.max(...rows.map((r) => r[i]?.length ?? 0))) ?? []
  return rows.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i] ?? 0))).join('  ')).join('\n')
}

function table (rows: Array<Record<string, unknown>>, columns: readonly string[] | undefined): string {
  if (rows.length === 0) return '(none)'
  const names = columns ?? Object.keys(rows[0] as Record<string, unknown>)
  return grid([names.map((n) => n.toUpperCase()), ...rows.map((r) => names.map((n) => cell(r[n])))])
}

/** A record as `field  value` lines. */
function fields (record: Record<string, unknown>): string {
  return grid(Object.entries(record).map(([name, value]) => [name, cell(value)]))
}

function renderTable (answer: Answer): string {
  return Object.entries(answer.body).map(([member, value]) => {
    const columns = answer.columns?.[member]
    if (Array.isArray(value) && (value.length > 0 ? value.every(isRecord) : columns !== undefined)) return table(value, columns)
    if (isRecord(value)) return fields(value)
    return `${member}  ${cell(value)}`
  }).join('\n\n')
}

/** A failure as one line of problem+json (on stderr), as the HTTP APIs write it. */
export function formatProblem (problem: ProblemBody): string {
  return `${JSON.stringify(problem)}\n`
}

export function formatAnswer (answer: Answer, format: OutputFormat): string {
  return `${format === 'table' ? renderTable(answer) : JSON.stringify(answer.body, null, 2)}\n`
}
