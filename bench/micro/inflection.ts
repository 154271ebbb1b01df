import { performance } from 'node:perf_hooks'
import { pathToFileURL } from 'node:url'
import { DEFAULT_MAX_DEPTH, KEY_CASES, inflectJsonText, type KeyCase } from '../../gateway/inflection/index.js'
import { inflectResponseBody } from '../../gateway/proxy/json-bodies.js'
import { DEFAULT_SEED } from '../../upstream-mock/config.js'
import { pageMeta } from '../../upstream-mock/resource-routes.js'
import type { User } from '../../upstream-mock/schemas.js'
import { seedUser } from '../../upstream-mock/seed.js'
import type { MicroResult } from '../report/types.js'
import { median } from '../rounds.js'

/**
 * Inflection micro-benchmark, no network: what converting the keys of a JSON
 * body costs on top of the JSON round-trip the gateway would pay anyway.
 *
 * For each body size and key style, two operations run in alternating rounds on the same
 * bytes, both starting from the Buffer the gateway reads from the upstream:
 *   - baseline: JSON.stringify(JSON.parse(body.toString('utf8')));
 *   - inflect:  inflectResponseBody(body, style, 512), the gateway's own response path
 *               (decode, parse, convert every key with the shared memoised converter,
 *               stringify).
 * costRatio is the median of the per-round ratios inflect / baseline: a noisy neighbour
 * slows both sides of a round alike. It counts the parse in both numerator and
 * denominator, so it is stricter than "transform + stringify ≤ 1.3 × parse + stringify".
 * MB/s are of input bytes, with 1 MB = 1 048 576 bytes like the size labels.
 */

/** The target: inflecting may cost at most this much more than the bare JSON round-trip. */
export const MAX_COST_RATIO = 1.3

export interface MicroSize {
  /** What reports show, e.g. "100 KB". */
  label: string
  /** Wanted body size; the body is the users page closest to it. */
  bytes: number
}

export const MICRO_SIZES: readonly MicroSize[] = Object.freeze([
  { label: '1 KB', bytes: 1024 },
  { label: '100 KB', bytes: 100 * 1024 },
  { label: '10 MB', bytes: 10 * 1024 * 1024 }
])

/** Wall-clock budget of the timed part of a whole run; rounds may overrun it (MIN_ROUNDS). */
export const FULL_BUDGET_MS = 45_000
export const QUICK_BUDGET_MS = 6_000

export interface InflectionMicroOptions {
  quick: boolean
  onProgress?: (line: string) => void
  /** Timed budget of the whole run in ms; default FULL_BUDGET_MS or QUICK_BUDGET_MS. */
  budgetMs?: number
  /** Bodies to measure; default MICRO_SIZES. */
  sizes?: readonly MicroSize[]
}

const MB = 1024 * 1024
const MIN_ROUNDS = { quick: 3, full: 5 }
/** Rounds a cell aims at within its share of the budget; its samples are sized to fit. */
const TARGET_ROUNDS = { quick: 5, full: 15 }
const MAX_ROUNDS = 200
/** Share of a cell's budget spent warming up before any sample is kept. */
const WARMUP_SHARE = 0.1
/** Share of the budget spent running every style before the first cell, and on what body. */
const GLOBAL_WARMUP_SHARE = 0.04
const WARMUP_BODY_BYTES = 16 * 1024
/** Bodies above this are not round-trip checked: the check would cost more than the cell. */
const CHECKED_BODY_MAX_BYTES = MB

/**
 * A users page as upstream-mock answers `GET /users` (snake_case keys, nested address,
 * preferences and phone numbers), with the number of users whose JSON is closest to
 * `targetBytes` (at least one). Same bytes on every run.
 */
export function buildUsersPage (targetBytes: number): Buffer {
  const users: User[] = []
  let usersBytes = 0 // the users' JSON, commas included
  const distance = (count: number, bytes: number): number => Math.abs(Buffer.byteLength(JSON.stringify(usersPage([], count))) + bytes - targetBytes)
  for (let id = 1; ; id++) {
    const user = seedUser(DEFAULT_SEED, id)
    const bytes = usersBytes + Buffer.byteLength(JSON.stringify(user)) + (users.length > 0 ? 1 : 0)
    if (users.length > 0 && distance(users.length + 1, bytes) >= distance(users.length, usersBytes)) break
    users.push(user)
    usersBytes = bytes
  }
  return Buffer.from(JSON.stringify(usersPage(users, users.length)), 'utf8')
}

function usersPage (users: User[], count: number): { users: User[], meta: ReturnType<typeof pageMeta> } {
  return { users, meta: pageMeta(1, count, count) }
}

function baseline (body: Buffer): string {
  return JSON.stringify(JSON.parse(body.toString('utf8')))
}

interface Operation { run: () => string, msPerOp: number }

/** Runs `op` `iterations` times; ms per run. The length sum keeps the work observable. */
function timeBatch (op: () => string, iterations: number, sink: { length: number }): number {
  const started = performance.now()
  for (let i = 0; i < iterations; i++) sink.length += op().length
  return (performance.now() - started) / iterations
}

interface CellTimes { baselineMs: number, inflectMs: number, costRatio: number, rounds: number }

/** Warms both operations up, then alternates them (a b, b a, …) until the budget is spent. */
function measureCell (body: Buffer, style: KeyCase, budgetMs: number, quick: boolean): CellTimes {
  const sink = { length: 0 }
  const ops: Operation[] = [
    { run: () => baseline(body), msPerOp: 0 },
    { run: () => inflectResponseBody(body, style, DEFAULT_MAX_DEPTH), msPerOp: 0 }
  ]
  const started = performance.now()
  const warmupEnds = started + budgetMs * WARMUP_SHARE
  let warmups = 0
  do {
    for (const op of ops) op.msPerOp = timeBatch(op.run, 1, sink)
    warmups++
  } while (performance.now() < warmupEnds && warmups < 1000)
  const mode = quick ? 'quick' : 'full'
  const sampleMs = budgetMs * (1 - WARMUP_SHARE) / (2 * TARGET_ROUNDS[mode])
  const iterations = ops.map((op) => Math.max(1, Math.round(sampleMs / Math.max(op.msPerOp, 1e-6))))
  const times: [number[], number[]] = [[], []]
  const ratios: number[] = []
  const endsAt = started + budgetMs
  while (ratios.length < MIN_ROUNDS[mode] || (performance.now() < endsAt && ratios.length < MAX_ROUNDS)) {
    const round: [number, number] = [0, 0]
    for (const which of ratios.length % 2 === 0 ? [0, 1] : [1, 0]) {
      round[which] = timeBatch(ops[which].run, iterations[which], sink)
      times[which].push(round[which])
    }
    ratios.push(round[1] / round[0])
  }
  if (sink.length === 0) throw new Error('the measured operations produced nothing')
  return { baselineMs: median(times[0]), inflectMs: median(times[1]), costRatio: median(ratios), rounds: ratios.length }
}

/**
 * A gateway serves every style from the same code, so that code is measured once it has
 * seen them all: otherwise the first cell of each style would pay for the JIT relearning
 * its shapes (seen as a 1 KB cell at 1.5 × on a quick run).
 */
function warmUpEveryStyle (budgetMs: number): void {
  const body = buildUsersPage(WARMUP_BODY_BYTES)
  const endsAt = performance.now() + budgetMs
  const sink = { length: 0 }
  do {
    sink.length += baseline(body).length
    for (const style of KEY_CASES) sink.length += inflectResponseBody(body, style, DEFAULT_MAX_DEPTH).length
  } while (performance.now() < endsAt)
}

/** Guards against timing a path that does not do the work: every key must come back to snake. */
function checkRoundTrip (body: Buffer, style: KeyCase): void {
  if (body.length > CHECKED_BODY_MAX_BYTES) return
  const inflected = inflectResponseBody(body, style, DEFAULT_MAX_DEPTH)
  if (inflectJsonText(inflected, 'snake') !== baseline(body)) {
    throw new Error(`inflecting to ${style} and back to snake changed the body`)
  }
}

/**
 * Larger bodies get more of the budget: a 1 KB sample holds thousands of runs and settles
 * fast, while a 10 MB sample is one run with its garbage collections, and needs rounds.
 */
function budgetWeight (bytes: number): number {
  return 1 + Math.max(0, Math.log10(bytes / 1024))
}

const mbPerSecond = (bytes: number, msPerOp: number): number => bytes / MB / (msPerOp / 1000)

/** Measures every size × style in MICRO_SIZES × KEY_CASES (or the given sizes). */
export async function runInflectionMicro (options: InflectionMicroOptions): Promise<MicroResult[]> {
  const sizes = options.sizes ?? MICRO_SIZES
  const budgetMs = options.budgetMs ?? (options.quick ? QUICK_BUDGET_MS : FULL_BUDGET_MS)
  const totalWeight = sizes.reduce((sum, size) => sum + budgetWeight(size.bytes), 0)
  warmUpEveryStyle(budgetMs * GLOBAL_WARMUP_SHARE)
  const results: MicroResult[] = []
  for (const size of sizes) {
    const body = buildUsersPage(size.bytes)
    const cellBudgetMs = budgetMs * budgetWeight(size.bytes) / totalWeight / KEY_CASES.length
    for (const style of KEY_CASES) {
      checkRoundTrip(body, style)
      const times = measureCell(body, style, cellBudgetMs, options.quick)
      const result: MicroResult = {
        size: size.label,
        bytes: body.length,
        style,
        parseStringifyMBps: mbPerSecond(body.length, times.baselineMs),
        inflectMBps: mbPerSecond(body.length, times.inflectMs),
        costRatio: times.costRatio,
        met: times.costRatio <= MAX_COST_RATIO
      }
      results.push(result)
      options.onProgress?.(`inflection ${size.label} ${style}: ${formatRow(result)} (${times.rounds} rounds)`)
      // Let the event loop breathe between cells: the caller may be printing progress.
      await new Promise((resolve) => setImmediate(resolve))
    }
  }
  return results
}

function formatRow (r: MicroResult): string {
  return `parse+stringify ${r.parseStringifyMBps.toFixed(1)} MB/s, inflect ${r.inflectMBps.toFixed(1)} MB/s, ` +
    `ratio ${r.costRatio.toFixed(3)} ${r.met ? 'met' : 'MISSED'}`
}

/** A plain-text table of the results, one line per size × style. */
export function formatMicroTable (results: readonly MicroResult[]): string {
  const header = ['size', 'bytes', 'style', 'parse+stringify MB/s', 'inflect MB/s', 'cost ratio', `≤ ${MAX_COST_RATIO}`]
  const rows = results.map((r) => [r.size, String(r.bytes), r.style, r.parseStringifyMBps.toFixed(1), r.inflectMBps.toFixed(1),
    r.costRatio.toFixed(3), r.met ? 'yes' : 'NO'])
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => (row[i] as string).length)))
  const line = (cells: string[]): string => cells.map((c, i) => c.padEnd(widths[i] as number)).join('  ').trimEnd()
  return [line(header), ...rows.map(line)].join('\n')
}

/**
 * `node dist-bench/bench/micro/inflection.js [--quick] [--json] [--budget <ms>]`: progress on stderr; on stdout
 * a table and the JSON, or with --json only the JSON array (for the bench orchestrator).
 */
async function main (argv: readonly string[]): Promise<void> {
  const quick = argv.includes('--quick')
  const jsonOnly = argv.includes('--json')
  const budgetAt = argv.indexOf('--budget')
  const budgetMs = budgetAt === -1 ? undefined : Number(argv[budgetAt + 1])
  const results = await runInflectionMicro({ quick, ...(budgetMs !== undefined && budgetMs > 0 ? { budgetMs } : {}), onProgress: (line) => { process.stderr.write(`${line}\n`) } })
  const json = JSON.stringify(results, null, jsonOnly ? undefined : 2)
  process.stdout.write(jsonOnly ? `${json}\n` : `${formatMicroTable(results)}\n\n${json}\n`)
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await main(process.argv.slice(2))
}
