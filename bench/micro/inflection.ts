import { performance } from 'node:perf_hooks'
import { pathToFileURL } from 'node:url'
import { isDeepStrictEqual } from 'node:util'
import { JsonKeyRewriter, KEY_CASES, KeySpellings, convertKey, type KeyCase } from '../../gateway/inflection/index.js'
import type { InflectionStreamResult, MicroResult } from '../report/types.js'
import { median } from '../rounds.js'
import { MICRO_SHAPES, type MicroShape } from './bodies.js'
import { measureEventLoopBlock } from './event-loop-block.js'
import { runStreamMemory } from './stream-memory.js'

/**
 * Inflection micro-benchmark, no network: what renaming the member names of a JSON body
 * costs, against what the cheapest look at the same body costs, JSON.parse.
 *
 * For each shape × size × style, three operations run in alternating rounds
 * (a b c, c b a, …) on the same bytes:
 *   - parse:         JSON.parse(text), the text decoded from the Buffer beforehand;
 *   - decode + parse: JSON.parse(buffer.toString()), what parsing an upstream's bytes
 *                    really costs (shown, not judged);
 *   - rewrite:       new JsonKeyRewriter(table).rewriteAll(buffer), the gateway's own
 *                    renaming, with the table of a KeySpellings kept warm across runs as
 *                    the gateway keeps it per upstream.
 * ratio is the median of the per-round ratios parse time / rewrite time, that is
 * rewriter MB/s ÷ JSON.parse MB/s: a noisy neighbour slows both sides of a round alike.
 * The target is ≥ 1.0: renaming the names costs no more than parsing the body would.
 * MB/s are of input bytes, with 1 MB = 1 048 576 bytes like the size labels.
 *
 * Every cell first checks the rewriter's output (see checkRewrite), so a rewriter that
 * skipped work could not look fast.
 */

/** The target: the rewriter renames at least as many MB/s as JSON.parse parses. */
export const MIN_RATIO = 1.0

export interface MicroSize {
  /** What reports show, e.g. "100 KB". */
  label: string
  /** Wanted body size; the body is the page closest to it. */
  bytes: number
}

export const MICRO_SIZES: readonly MicroSize[] = Object.freeze([
  { label: '1 KB', bytes: 1024 },
  { label: '100 KB', bytes: 100 * 1024 },
  { label: '10 MB', bytes: 10 * 1024 * 1024 }
])

/** Wall-clock budget of the timed part of a whole run; rounds may overrun it (MIN_ROUNDS). */
export const FULL_BUDGET_MS = 60_000
export const QUICK_BUDGET_MS = 10_000

export interface InflectionMicroOptions {
  quick: boolean
  onProgress?: (line: string) => void
  /** Timed budget of the whole run in ms; default FULL_BUDGET_MS or QUICK_BUDGET_MS. */
  budgetMs?: number
  /** Bodies to measure; default MICRO_SIZES × MICRO_SHAPES. */
  sizes?: readonly MicroSize[]
  shapes?: readonly MicroShape[]
}

const MB = 1024 * 1024
const MIN_ROUNDS = { quick: 3, full: 5 }
/** Rounds a cell aims at within its share of the budget; its samples are sized to fit. */
const TARGET_ROUNDS = { quick: 5, full: 15 }
const MAX_ROUNDS = 200
/** Share of a cell's budget spent warming up before any sample is kept. */
const WARMUP_SHARE = 0.1
/** Share of the budget spent running every shape and style before the first cell, and on what bodies. */
const GLOBAL_WARMUP_SHARE = 0.04
const WARMUP_BODY_BYTES = 16 * 1024
/** Bodies above this get the byte round-trip only: parsing both sides would cost more than the cell. */
const PARSE_CHECKED_MAX_BYTES = MB
/** The upstream whose spellings the tables learn: upstream-mock's, snake_case. */
const UPSTREAM_CASE: KeyCase = 'snake'

/** The three operations of a round, by index. */
const PARSE = 0
const DECODE_PARSE = 1
const REWRITE = 2

type Operation = () => number

/** Runs `op` `iterations` times; ms per run. The sum keeps the work observable. */
function timeBatch (op: Operation, iterations: number, sink: { total: number }): number {
  const started = performance.now()
  for (let i = 0; i < iterations; i++) sink.total += op()
  return (performance.now() - started) / iterations
}

function operations (body: Buffer, spellings: KeySpellings, style: KeyCase): Operation[] {
  const text = body.toString('utf8')
  const table = spellings.responseTable(style)
  return [
    () => JSON.parse(text) === null ? 0 : 1,
    () => JSON.parse(body.toString('utf8')) === null ? 0 : 1,
    () => new JsonKeyRewriter(table).rewriteAll(body).length
  ]
}

interface CellTimes { msPerOp: [number, number, number], ratio: number, rounds: number }

/** Warms the operations up, then alternates them (a b c, c b a, …) until the budget is spent. */
function measureCell (ops: Operation[], budgetMs: number, quick: boolean): CellTimes {
  const sink = { total: 0 }
  const started = performance.now()
  const warmupEnds = started + budgetMs * WARMUP_SHARE
  const warmupMs = [0, 0, 0]
  let warmups = 0
  do {
    ops.forEach((op, which) => { warmupMs[which] = timeBatch(op, 1, sink) })
    warmups++
  } while (performance.now() < warmupEnds && warmups < 1000)
  const mode = quick ? 'quick' : 'full'
  const sampleMs = budgetMs * (1 - WARMUP_SHARE) / (ops.length * TARGET_ROUNDS[mode])
  const iterations = warmupMs.map((ms) => Math.max(1, Math.round(sampleMs / Math.max(ms, 1e-6))))
  const times: [number[], number[], number[]] = [[], [], []]
  const ratios: number[] = []
  const forward = [PARSE, DECODE_PARSE, REWRITE]
  const backward = [...forward].reverse()
  const endsAt = started + budgetMs
  while (ratios.length < MIN_ROUNDS[mode] || (performance.now() < endsAt && ratios.length < MAX_ROUNDS)) {
    const round = [0, 0, 0]
    for (const which of ratios.length % 2 === 0 ? forward : backward) {
      round[which] = timeBatch(ops[which] as Operation, iterations[which] as number, sink)
      times[which]?.push(round[which] as number)
    }
    ratios.push((round[PARSE] as number) / (round[REWRITE] as number))
  }
  if (sink.total === 0) throw new Error('the measured operations produced nothing')
  return { msPerOp: [median(times[0]), median(times[1]), median(times[2])], ratio: median(ratios), rounds: ratios.length }
}

/** `value` with every object member renamed by `rename`: what the rewriter's output must parse to. */
export function renameParsed (value: unknown, rename: (key: string) => string): unknown {
  if (Array.isArray(value)) return value.map((item) => renameParsed(item, rename))
  if (value === null || typeof value !== 'object') return value
  const renamed: Record<string, unknown> = {}
  for (const [key, member] of Object.entries(value)) renamed[rename(key)] = renameParsed(member, rename)
  return renamed
}

/**
 * Guards against timing a path that does not do the work. The output, renamed back
 * through the request table (the spellings learned on the way out), must give the input
 * bytes exactly; up to 1 MB, it must also parse to the parsed input with every name
 * converted by the rules; and to any style but the upstream's own, it must differ from
 * the input. Throws when any fails.
 */
export function checkRewrite (body: Buffer, spellings: KeySpellings, style: KeyCase): void {
  const output = new JsonKeyRewriter(spellings.responseTable(style)).rewriteAll(body)
  const back = new JsonKeyRewriter(spellings.requestTable(style)).rewriteAll(output)
  if (!back.equals(body)) throw new Error(`renaming ${body.length} bytes to ${style} and back did not give the input bytes`)
  if (style !== spellings.nativeCase && output.equals(body)) throw new Error(`renaming ${body.length} bytes to ${style} changed nothing`)
  if (body.length > PARSE_CHECKED_MAX_BYTES) return
  const expected = renameParsed(JSON.parse(body.toString('utf8')), (key) => convertKey(key, style))
  if (!isDeepStrictEqual(JSON.parse(output.toString('utf8')), expected)) {
    throw new Error(`renaming ${body.length} bytes to ${style} did not parse to the input with its names converted`)
  }
}

/**
 * A gateway serves every style from the same code, so that code is measured once it has
 * seen them all: otherwise the first cell of each style would pay for the JIT relearning
 * its shapes.
 */
function warmUpEveryStyle (shapes: readonly MicroShape[], spellings: Map<MicroShape, KeySpellings>, budgetMs: number): void {
  const bodies = shapes.map((shape) => ({ body: shape.build(WARMUP_BODY_BYTES), spellings: spellings.get(shape) as KeySpellings }))
  const endsAt = performance.now() + budgetMs
  const sink = { total: 0 }
  do {
    for (const { body, spellings } of bodies) {
      for (const style of KEY_CASES) for (const op of operations(body, spellings, style)) sink.total += op()
    }
  } while (performance.now() < endsAt)
}

/**
 * Larger bodies get more of the budget: a 1 KB sample holds thousands of runs and settles
 * fast, while a 10 MB sample is one run with its garbage collections, and needs rounds.
 */
function budgetWeight (bytes: number): number {
  return 1 + Math.max(0, Math.log10(bytes / 1024))
}

const mbPerSecond = (bytes: number, msPerOp: number): number => bytes / MB / (msPerOp / 1000)

/** Measures every shape × size × style (MICRO_SHAPES × MICRO_SIZES × KEY_CASES, or those given), in that order. */
export async function runInflectionMicro (options: InflectionMicroOptions): Promise<MicroResult[]> {
  const sizes = options.sizes ?? MICRO_SIZES
  const shapes = options.shapes ?? MICRO_SHAPES
  const budgetMs = options.budgetMs ?? (options.quick ? QUICK_BUDGET_MS : FULL_BUDGET_MS)
  const totalWeight = shapes.length * sizes.reduce((sum, size) => sum + budgetWeight(size.bytes), 0)
  // One upstream per shape, as the gateway keeps one KeySpellings per upstream.
  const spellings = new Map(shapes.map((shape) => [shape, new KeySpellings(UPSTREAM_CASE)]))
  warmUpEveryStyle(shapes, spellings, budgetMs * GLOBAL_WARMUP_SHARE)
  const results: MicroResult[] = []
  for (const shape of shapes) {
    const upstream = spellings.get(shape) as KeySpellings
    for (const size of sizes) {
      const body = shape.build(size.bytes)
      const cellBudgetMs = budgetMs * budgetWeight(size.bytes) / totalWeight / KEY_CASES.length
      for (const style of KEY_CASES) {
        checkRewrite(body, upstream, style)
        const times = measureCell(operations(body, upstream, style), cellBudgetMs, options.quick)
        const result: MicroResult = {
          size: size.label,
          shape: shape.label,
          bytes: body.length,
          style,
          parseMBps: mbPerSecond(body.length, times.msPerOp[PARSE]),
          decodeParseMBps: mbPerSecond(body.length, times.msPerOp[DECODE_PARSE]),
          rewriteMBps: mbPerSecond(body.length, times.msPerOp[REWRITE]),
          ratio: times.ratio,
          met: times.ratio >= MIN_RATIO
        }
        results.push(result)
        options.onProgress?.(`inflection ${shape.label} ${size.label} ${style}: ${formatRow(result)} (${times.rounds} rounds)`)
        // Let the event loop breathe between cells: the caller may be printing progress.
        await new Promise((resolve) => setImmediate(resolve))
      }
    }
  }
  return results
}

function formatRow (r: MicroResult): string {
  return `JSON.parse ${r.parseMBps.toFixed(1)} MB/s, rewrite ${r.rewriteMBps.toFixed(1)} MB/s, ` +
    `ratio ${r.ratio.toFixed(3)} ${r.met ? 'met' : 'MISSED'}`
}

/** A plain-text table of the results, one line per shape × size × style. */
export function formatMicroTable (results: readonly MicroResult[]): string {
  const header = ['shape', 'size', 'bytes', 'style', 'JSON.parse MB/s', 'decode+parse MB/s', 'rewrite MB/s', 'ratio', `≥ ${MIN_RATIO.toFixed(1)}`]
  const rows = results.map((r) => [r.shape, r.size, String(r.bytes), r.style, r.parseMBps.toFixed(1), r.decodeParseMBps.toFixed(1),
    r.rewriteMBps.toFixed(1), r.ratio.toFixed(3), r.met ? 'yes' : 'NO'])
  return plainTable(header, rows)
}

/** The event-loop and memory rows as plain text. */
export function formatStreamTable (stream: InflectionStreamResult): string {
  const { eventLoop, memory } = stream
  return plainTable(['row', 'measured', 'target', 'met'], [
    [`longest push, ${eventLoop.pushes} pushes of ${eventLoop.chunkBytes / 1024} KiB over ${eventLoop.passes} bodies of ${(eventLoop.bodyBytes / MB).toFixed(1)} MB`,
      `${eventLoop.longestPushMs.toFixed(2)} ms (median ${eventLoop.medianPushMs.toFixed(3)} ms, most CPU ${eventLoop.longestPushCpuMs.toFixed(2)} ms; loop delay max ${eventLoop.loopDelayMaxMs.toFixed(2)} ms, p99 ${eventLoop.loopDelayP99Ms.toFixed(2)} ms)`,
      `≤ ${eventLoop.maxBlockMs} ms`, eventLoop.met ? 'yes' : 'NO'],
    [`RSS growth, ${(memory.bodyBytes / MB).toFixed(0)} MB streamed to ${memory.style}`,
      `${memory.growthMiB.toFixed(1)} MiB (before ${memory.rssBeforeMiB.toFixed(1)}, peak ${memory.rssPeakMiB.toFixed(1)}, final ${memory.rssFinalMiB.toFixed(1)}; retained ${memory.retainedMiB.toFixed(1)})`,
      `≤ ${memory.maxGrowthMiB} MiB`, memory.met ? 'yes' : 'NO']
  ])
}

function plainTable (header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => (row[i] as string).length)))
  const line = (cells: string[]): string => cells.map((c, i) => c.padEnd(widths[i] as number)).join('  ').trimEnd()
  return [line(header), ...rows.map(line)].join('\n')
}

/** What the micro process hands the bench orchestrator. */
export interface MicroOutput {
  micro: MicroResult[]
  inflectionStream: InflectionStreamResult
}

/**
 * `node dist-bench/bench/micro/inflection.js [--quick] [--json] [--budget <ms>]`: the
 * rewriter cells, then the event-loop row (in this process, its code warm) and the
 * memory row (in a child process of its own). Progress on stderr; on stdout the tables
 * and the JSON, or with --json only the JSON (for the bench orchestrator).
 */
async function main (argv: readonly string[]): Promise<void> {
  const quick = argv.includes('--quick')
  const jsonOnly = argv.includes('--json')
  const budgetAt = argv.indexOf('--budget')
  const budgetMs = budgetAt === -1 ? undefined : Number(argv[budgetAt + 1])
  const onProgress = (line: string): void => { process.stderr.write(`${line}\n`) }
  const micro = await runInflectionMicro({ quick, ...(budgetMs !== undefined && budgetMs > 0 ? { budgetMs } : {}), onProgress })
  const eventLoop = await measureEventLoopBlock({ onProgress })
  const memory = await runStreamMemory({ onProgress })
  const output: MicroOutput = { micro, inflectionStream: { eventLoop, memory } }
  const json = JSON.stringify(output, null, jsonOnly ? undefined : 2)
  process.stdout.write(jsonOnly ? `${json}\n` : `${formatMicroTable(micro)}\n\n${formatStreamTable(output.inflectionStream)}\n\n${json}\n`)
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await main(process.argv.slice(2))
}
