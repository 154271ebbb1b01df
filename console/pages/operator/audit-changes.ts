/**
 * A record's changes in a few words for the Audit table: the members that differ, each
 * as `name: before → after`, values cut short. The whole record is in the export; the
 * table only says what moved. Identity never records a secret; the page escapes
 * whatever is here all the same.
 */

export type AuditChanges = { before?: unknown, after?: unknown } | null

const MAX_MEMBERS = 4
const MAX_VALUE_CHARS = 60
const NONE = '—'

type Members = Record<string, unknown>

function isMembers (value: unknown): value is Members {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/** A value as one short line: strings bare, lists comma-separated, anything else as JSON. */
export function shortValue (value: unknown): string {
  let text: string
  if (value === undefined) text = NONE
  else if (typeof value === 'string') text = value
  else if (Array.isArray(value) && value.every((item) => typeof item === 'string')) text = `[${value.join(', ')}]`
  else text = JSON.stringify(value) ?? String(value)
  return text.length > MAX_VALUE_CHARS ? `${text.slice(0, MAX_VALUE_CHARS - 1)}…` : text
}

function same (a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b)
}

function memberLine (name: string, before: Members | null, after: Members | null): string | null {
  const had = before !== null && Object.hasOwn(before, name)
  const has = after !== null && Object.hasOwn(after, name)
  if (had && has) return same(before[name], after[name]) ? null : `${name}: ${shortValue(before[name])} → ${shortValue(after[name])}`
  if (has) return `${name}: ${shortValue(after?.[name])}`
  return `${name}: ${shortValue(before?.[name])} → ${NONE}`
}

/** The lines that say what a record changed; none when it changed nothing (a login, a refusal). */
export function changesSummary (changes: AuditChanges): string[] {
  if (changes === null) return []
  const { before, after } = changes
  const beforeMembers = isMembers(before) ? before : null
  const afterMembers = isMembers(after) ? after : null
  // A row written by hand may hold anything: it is shown whole rather than read member by member.
  if ((before !== undefined && beforeMembers === null) || (after !== undefined && afterMembers === null)) {
    return [`${shortValue(before)} → ${shortValue(after)}`]
  }
  const names = [...new Set([...Object.keys(beforeMembers ?? {}), ...Object.keys(afterMembers ?? {})])]
  const lines = names.map((name) => memberLine(name, beforeMembers, afterMembers)).filter((line): line is string => line !== null)
  if (lines.length <= MAX_MEMBERS) return lines
  return [...lines.slice(0, MAX_MEMBERS), `and ${lines.length - MAX_MEMBERS} more`]
}
