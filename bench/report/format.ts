import type { BenchResult, MachineInfo, BenchSettings } from './types.js'

/**
 * How every figure in the Markdown report, the README summary and the SVG chart is
 * written, so the three never disagree. Plain text: escaping is the caller's job.
 *
 * Thousands are grouped with a no-break space (U+00A0) rather than a comma, which
 * reads as a decimal mark in half the world, and rather than a plain space, which lets
 * a narrow table cell wrap "12 345" into two numbers. Intl is avoided so the output is
 * the same on every Node build, ICU or not.
 */

/** What a figure that cannot be computed (NaN, ±Infinity) is written as. */
export const NOT_A_NUMBER = '—'

const GROUP_SEPARATOR = '\u00a0'

/** `value` with `decimals` decimals and its integer part grouped by thousands. */
export function formatNumber (value: number, decimals: number): string {
  if (!Number.isFinite(value)) return NOT_A_NUMBER
  const fixed = Math.abs(value).toFixed(decimals)
  const [whole, fraction] = fixed.split('.') as [string, string | undefined]
  const grouped = whole.replace(/\B(?=(\d{3})+(?!\d))/g, GROUP_SEPARATOR)
  // -0.00 would claim a sign the rounded figure does not have
  const negative = value < 0 && Number(fixed) !== 0
  return `${negative ? '-' : ''}${grouped}${fraction === undefined ? '' : `.${fraction}`}`
}

/** Requests per second: a whole number, e.g. `12 345`. */
export const formatRate = (value: number): string => formatNumber(value, 0)

/** Slow rates (logins, argon2 verifications): one decimal, so 0.4/s is not shown as 0. */
export const formatSlowRate = (value: number): string => formatNumber(value, 1)

/** A ratio, e.g. `0.93`. */
export const formatRatio = (value: number): string => formatNumber(value, 2)

/** Milliseconds, e.g. `1.25`. */
export const formatMs = (value: number): string => formatNumber(value, 2)

/** A signed difference in milliseconds, e.g. `+0.25`, `-1.10`. */
export function formatSignedMs (value: number): string {
  const text = formatMs(value)
  const unsigned = text === NOT_A_NUMBER || text.startsWith('-') || /^0(\.0+)?$/.test(text)
  return unsigned ? text : `+${text}`
}

/** CPU time per request in µs, e.g. `151`. */
export const formatMicros = (value: number): string => formatNumber(value, 0)

/** Throughput of bytes, e.g. `412.3`. */
export const formatMBps = (value: number): string => formatNumber(value, 1)

/** Memory in MiB, e.g. `84.2`. */
export const formatMiB = (value: number): string => formatNumber(value, 1)

/** A count (non-2xx answers, errors): whole when it is, one decimal when a median falls between two rounds. */
export const formatCount = (value: number): string => formatNumber(value, Number.isInteger(value) ? 0 : 1)

function parseInstant (iso: string, field: string): Date {
  const date = new Date(iso)
  if (Number.isNaN(date.getTime())) throw new Error(`bench result: ${field} "${iso}" is not an ISO 8601 instant`)
  return date
}

/** The UTC calendar date of an ISO instant, `YYYY-MM-DD`. */
export function utcDate (iso: string, field = 'startedAt'): string {
  return parseInstant(iso, field).toISOString().slice(0, 10)
}

/** The UTC time of day of an ISO instant, `HH:MM:SS`. */
export function utcTime (iso: string, field = 'startedAt'): string {
  return parseInstant(iso, field).toISOString().slice(11, 19)
}

/** How long the run took, e.g. `12 min 31 s`, `48 s`. */
export function formatElapsed (result: Pick<BenchResult, 'startedAt' | 'finishedAt'>): string {
  const seconds = Math.round((parseInstant(result.finishedAt, 'finishedAt').getTime() - parseInstant(result.startedAt, 'startedAt').getTime()) / 1000)
  if (seconds < 0) return NOT_A_NUMBER
  if (seconds < 60) return `${seconds} s`
  return `${Math.floor(seconds / 60)} min ${seconds % 60} s`
}

/** The machine in one line: CPU, cores, RAM, OS, Node, Redis and nginx (or "nginx absent"). */
export function describeMachine (machine: MachineInfo): string {
  return [
    machine.cpuModel,
    `${machine.cores} ${machine.cores === 1 ? 'core' : 'cores'}`,
    `${formatNumber(machine.memoryGiB, 1)} GiB RAM`,
    machine.os,
    `Node ${machine.node}`,
    `Redis ${machine.redis}`,
    machine.nginx === null ? 'nginx absent' : `nginx ${machine.nginx}`
  ].join(', ')
}

/** The load settings in one line, e.g. `10 s × 5 rounds, 100 connections`. */
export function describeLoad (settings: BenchSettings): string {
  return `${formatNumber(settings.durationSeconds, Number.isInteger(settings.durationSeconds) ? 0 : 1)} s × ${settings.rounds} ${settings.rounds === 1 ? 'round' : 'rounds'}, ${formatCount(settings.connections)} connections`
}
