import { execFile } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { promisify } from 'node:util'
import { JsonKeyRewriter, KeySpellings, type KeyCase } from '../../gateway/inflection/index.js'
import type { StreamMemoryResult } from '../report/types.js'
import { buildUsersPage } from './bodies.js'

/**
 * What renaming a body that never fits in memory costs in memory: a 200 MB JSON array
 * of upstream-mock users, made chunk by chunk as it is pushed (64 KiB, each push in its
 * own macrotask, as from an upstream socket) through one rewriter whose output is
 * dropped. In a child process of its own, so that nothing else the bench holds moves its
 * RSS. RSS is read before (after a warm-up pass and a full collection), sampled while it
 * streams, and read at the end, with the kernel's high-water mark (VmHWM, reset before
 * the stream) catching a peak between samples. Growth is max(peak, final) − before.
 * After it, a full collection shows how much of that was kept (retained: heap in use and
 * Buffers, against before) rather than garbage not yet collected.
 */

/** The target: streaming grows the process by at most this much. */
export const MAX_GROWTH_MIB = 32
export const STREAM_BODY_BYTES = 200 * 1024 * 1024
const CHUNK_BYTES = 64 * 1024
const WARMUP_BYTES = 16 * 1024 * 1024
/** Users repeated over and over to make the body; enough that the rewriter sees varied values. */
const CYCLE_BYTES = 256 * 1024
const SAMPLE_EVERY_CHUNKS = 16
const MiB = 1024 * 1024
const STYLE: KeyCase = 'camel'

/**
 * A body of `[` then `cycle` (users, each followed by `,`) repeated, its last `,` made
 * `]`: `1 + repeats × cycle.length` bytes, handed out in fresh chunks like a socket's.
 */
class RepeatedArray {
  readonly length: number
  private readonly cycle: Buffer
  private at = 0

  constructor (cycle: Buffer, repeats: number) {
    this.cycle = cycle
    this.length = 1 + repeats * cycle.length
  }

  /** The next chunk, or null at the end. */
  next (): Buffer | null {
    if (this.at >= this.length) return null
    const size = Math.min(CHUNK_BYTES, this.length - this.at)
    const chunk = Buffer.allocUnsafe(size)
    let filled = 0
    if (this.at === 0) chunk[filled++] = 0x5b
    while (filled < size) {
      const inCycle = (this.at + filled - 1) % this.cycle.length
      filled += this.cycle.copy(chunk, filled, inCycle, inCycle + size - filled)
    }
    this.at += size
    if (this.at === this.length) chunk[size - 1] = 0x5d
    return chunk
  }
}

/** Users of upstream-mock, each followed by a comma, about CYCLE_BYTES long. */
function userCycle (): Buffer {
  const page = JSON.parse(buildUsersPage(CYCLE_BYTES).toString('utf8')) as { users: unknown[] }
  return Buffer.from(page.users.map((user) => `${JSON.stringify(user)},`).join(''), 'utf8')
}

const nextMacrotask = async (): Promise<void> => await new Promise((resolve) => setImmediate(resolve))

/** Streams `body` through a rewriter of `table`; the output's length (dropped as it comes). */
async function stream (body: RepeatedArray, rewriter: JsonKeyRewriter, onChunk: (index: number) => void): Promise<number> {
  let outputBytes = 0
  for (let index = 0, chunk = body.next(); chunk !== null; index++, chunk = body.next()) {
    await nextMacrotask()
    outputBytes += rewriter.push(chunk).length
    onChunk(index)
  }
  rewriter.end()
  return outputBytes
}

function statusKiB (field: string): number | undefined {
  const match = new RegExp(`^${field}:\\s+(\\d+) kB$`, 'm').exec(readFileSync('/proc/self/status', 'utf8'))
  return match === null ? undefined : Number(match[1])
}

/** The JS heap in use and the Buffers' memory: what a leak would grow, without the garbage not yet collected. */
function liveBytes (): number {
  const { heapUsed, arrayBuffers } = process.memoryUsage()
  return heapUsed + arrayBuffers
}

/** Resets the kernel's peak RSS of this process to its current RSS; false where it cannot (not Linux). */
function resetPeakRss (): boolean {
  try {
    writeFileSync('/proc/self/clear_refs', '5')
    return true
  } catch {
    return false
  }
}

/** The measurement itself, in the child process. */
export async function measureStreamMemory (bodyBytes: number): Promise<StreamMemoryResult> {
  const cycle = userCycle()
  const spellings = new KeySpellings('snake')
  const table = spellings.responseTable(STYLE)
  // What one cycle becomes once renamed, to check the streamed output's length.
  const renamedCycle = new JsonKeyRewriter(table).rewriteAll(Buffer.concat([Buffer.from('['), cycle.subarray(0, cycle.length - 1), Buffer.from(']')])).length - 1
  await stream(new RepeatedArray(cycle, Math.ceil(WARMUP_BYTES / cycle.length)), new JsonKeyRewriter(table), () => {})
  const gc = (globalThis as { gc?: () => void }).gc
  gc?.()
  gc?.()
  await nextMacrotask()
  const rssBefore = process.memoryUsage.rss()
  const liveBefore = liveBytes()
  const hwmReset = resetPeakRss()
  let rssPeak = rssBefore
  const repeats = Math.max(1, Math.round((bodyBytes - 1) / cycle.length))
  const body = new RepeatedArray(cycle, repeats)
  const outputBytes = await stream(body, new JsonKeyRewriter(table), (index) => {
    if (index % SAMPLE_EVERY_CHUNKS === 0) rssPeak = Math.max(rssPeak, process.memoryUsage.rss())
  })
  const rssFinal = process.memoryUsage.rss()
  const hwmKiB = hwmReset ? statusKiB('VmHWM') : undefined
  rssPeak = Math.max(rssPeak, rssFinal, hwmKiB === undefined ? 0 : hwmKiB * 1024)
  if (outputBytes !== 1 + repeats * renamedCycle) {
    throw new Error(`streaming ${body.length} bytes gave ${outputBytes} bytes out, not the ${1 + repeats * renamedCycle} its users rename to`)
  }
  const growthMiB = (Math.max(rssPeak, rssFinal) - rssBefore) / MiB
  // Backing stores are freed by a background sweeper after the collection: give it a moment.
  gc?.()
  await new Promise((resolve) => setTimeout(resolve, 100))
  gc?.()
  const retainedMiB = (liveBytes() - liveBefore) / MiB
  return {
    bodyBytes: body.length,
    chunkBytes: CHUNK_BYTES,
    style: STYLE,
    rssBeforeMiB: rssBefore / MiB,
    rssPeakMiB: rssPeak / MiB,
    rssFinalMiB: rssFinal / MiB,
    growthMiB,
    retainedMiB,
    maxGrowthMiB: MAX_GROWTH_MIB,
    met: growthMiB <= MAX_GROWTH_MIB
  }
}

export interface StreamMemoryOptions {
  bodyBytes?: number
  onProgress?: (line: string) => void
}

/** Runs measureStreamMemory in a child process of its own (with --expose-gc, for the collection before). */
export async function runStreamMemory (options: StreamMemoryOptions = {}): Promise<StreamMemoryResult> {
  const bodyBytes = options.bodyBytes ?? STREAM_BODY_BYTES
  const script = fileURLToPath(import.meta.url)
  const { stdout } = await promisify(execFile)(process.execPath, ['--expose-gc', script, '--json', '--bytes', String(bodyBytes)], { maxBuffer: 1024 * 1024 })
  const result = JSON.parse(stdout) as StreamMemoryResult
  options.onProgress?.(`inflection stream memory: ${(result.bodyBytes / MiB).toFixed(0)} MB to ${result.style}, RSS +${result.growthMiB.toFixed(1)} MiB ` +
    `(before ${result.rssBeforeMiB.toFixed(1)}, peak ${result.rssPeakMiB.toFixed(1)}, final ${result.rssFinalMiB.toFixed(1)}, retained ${result.retainedMiB.toFixed(1)}) ${result.met ? 'met' : 'MISSED'}`)
  return result
}

/** `node --expose-gc dist-bench/bench/micro/stream-memory.js [--json] [--bytes <n>]` */
async function main (argv: readonly string[]): Promise<void> {
  const bytesAt = argv.indexOf('--bytes')
  const bodyBytes = bytesAt === -1 ? STREAM_BODY_BYTES : Number(argv[bytesAt + 1])
  if (!Number.isInteger(bodyBytes) || bodyBytes < CYCLE_BYTES) throw new RangeError(`--bytes must be an integer of at least ${CYCLE_BYTES}`)
  const result = await measureStreamMemory(bodyBytes)
  process.stdout.write(`${JSON.stringify(result, null, argv.includes('--json') ? undefined : 2)}\n`)
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await main(process.argv.slice(2))
}
