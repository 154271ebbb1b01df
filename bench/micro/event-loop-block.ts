import { monitorEventLoopDelay, performance } from 'node:perf_hooks'
import { JsonKeyRewriter, KEY_CASES, KeySpellings } from '../../gateway/inflection/index.js'
import type { EventLoopBlockResult } from '../report/types.js'
import { median } from '../rounds.js'
import { MICRO_SHAPES, type MicroShape } from './bodies.js'

/**
 * How long the gateway may hold the event loop while it renames a large upstream body:
 * the body is pushed through one rewriter in 64 KiB chunks, each in its own macrotask
 * (setImmediate between chunks), as chunks arrive from an upstream socket, and every
 * push is timed. The longest push is the longest synchronous stretch the renaming adds;
 * a garbage collection that falls inside a push counts in it. Wall time is judged; on a
 * busy machine a push may also wait for a core, so the most CPU time any push took
 * (the process's, GC threads included) is shown beside it to tell the two apart.
 * monitorEventLoopDelay watches the same passes: it also sees what happens between
 * pushes, so it is shown, not judged.
 */

/** The target: no push holds the event loop longer than this. */
export const MAX_BLOCK_MS = 10
export const EVENT_LOOP_BODY_BYTES = 10 * 1024 * 1024
/** What an upstream socket typically hands over per read. */
export const CHUNK_BYTES = 64 * 1024

export interface EventLoopBlockOptions {
  bodyBytes?: number
  shapes?: readonly MicroShape[]
  onProgress?: (line: string) => void
}

const nextMacrotask = async (): Promise<void> => await new Promise((resolve) => setImmediate(resolve))

/** Streams one body of every shape, to every style, through a fresh rewriter each: the durations of all pushes. */
export async function measureEventLoopBlock (options: EventLoopBlockOptions = {}): Promise<EventLoopBlockResult> {
  const bodyBytes = options.bodyBytes ?? EVENT_LOOP_BODY_BYTES
  const shapes = options.shapes ?? MICRO_SHAPES
  const bodies = shapes.map((shape) => ({ body: shape.build(bodyBytes), spellings: new KeySpellings('snake') }))
  const pushes: number[] = []
  let outputBytes = 0
  let passes = 0
  let longestCpuMs = 0
  // The tables learn the names before anything is timed, as the gateway's have after a first response.
  for (const { body, spellings } of bodies) for (const style of KEY_CASES) outputBytes += new JsonKeyRewriter(spellings.responseTable(style)).rewriteAll(body).length
  const delay = monitorEventLoopDelay({ resolution: 1 })
  delay.enable()
  for (const { body, spellings } of bodies) {
    for (const style of KEY_CASES) {
      const rewriter = new JsonKeyRewriter(spellings.responseTable(style))
      for (let at = 0; at < body.length; at += CHUNK_BYTES) {
        await nextMacrotask()
        const chunk = body.subarray(at, at + CHUNK_BYTES)
        const cpuBefore = process.cpuUsage()
        const started = performance.now()
        outputBytes += rewriter.push(chunk).length
        pushes.push(performance.now() - started)
        const cpu = process.cpuUsage(cpuBefore)
        longestCpuMs = Math.max(longestCpuMs, (cpu.user + cpu.system) / 1000)
      }
      rewriter.end()
      passes++
    }
  }
  await nextMacrotask()
  delay.disable()
  if (outputBytes === 0) throw new Error('the rewriter produced nothing')
  const longestPushMs = Math.max(...pushes)
  const result: EventLoopBlockResult = {
    bodyBytes: bodies[0]?.body.length ?? 0,
    chunkBytes: CHUNK_BYTES,
    passes,
    pushes: pushes.length,
    longestPushMs,
    medianPushMs: median(pushes),
    longestPushCpuMs: longestCpuMs,
    loopDelayMaxMs: delay.max / 1e6,
    loopDelayP99Ms: delay.percentile(99) / 1e6,
    maxBlockMs: MAX_BLOCK_MS,
    met: longestPushMs <= MAX_BLOCK_MS
  }
  options.onProgress?.(`inflection event loop: longest push ${longestPushMs.toFixed(2)} ms of ${pushes.length} (most CPU ${longestCpuMs.toFixed(2)} ms), loop delay max ${result.loopDelayMaxMs.toFixed(2)} ms ${result.met ? 'met' : 'MISSED'}`)
  return result
}
