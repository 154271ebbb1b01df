import { execFile } from 'node:child_process'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { promisify } from 'node:util'
import type { ToolSpec } from '../tools.js'
import type { LoadJob, LoadOutcome } from './job.js'

/**
 * The wrk load generator: C, an epoll loop per thread, a few percent of a core where
 * autocannon (a Node process) takes most of one. On a 2-core machine the generator
 * shares the cores with the upstream and the proxy, so what it takes is taken from
 * them: autocannon drives the static upstream at a half to four fifths of wrk's rate. A Lua
 * script per job sets the request and prints wrk's own figures as JSON at the end:
 * latency percentiles in microseconds from wrk's histogram.
 */

const run = promisify(execFile)

export const WRK: ToolSpec = { name: 'wrk', aptPackage: 'wrk', candidates: ['/usr/bin/wrk', '/usr/local/bin/wrk'], refuseFlag: '--no-wrk-install' }

/** Starts the one line of the output the bench reads. */
export const RESULT_MARKER = 'PORTIER_WRK_RESULT '

/** wrk has no count of requests to send, no way to follow refresh chains, and tells non-2xx answers apart only as "status ≥ 400". */
export function wrkCanRun (job: LoadJob): boolean {
  return job.amount === undefined && job.refreshTokens === undefined && job.rotateHeader?.sequential !== true && job.autocannonOnly !== true
}

/** `value` as a Lua string literal: printable ASCII as is, every other byte as a decimal escape. */
export function luaString (value: string): string {
  let out = '"'
  for (const byte of Buffer.from(value, 'utf8')) {
    out += byte >= 0x20 && byte < 0x7f && byte !== 0x22 && byte !== 0x5c ? String.fromCharCode(byte) : `\\${byte}`
  }
  return `${out}"`
}

/**
 * The Lua script of `job`. Rotated header values are read from `valuesFile` (one a
 * line) rather than written into the script: 20 000 keys would overflow the constant
 * table of a Lua chunk.
 */
export function wrkScript (job: LoadJob, valuesFile?: string): string {
  const lines = [`wrk.method = ${luaString(job.method)}`]
  for (const [name, value] of Object.entries(job.headers)) lines.push(`wrk.headers[${luaString(name)}] = ${luaString(value)}`)
  if (job.body !== undefined) lines.push(`wrk.body = ${luaString(job.body)}`)
  if (job.rotateHeader !== undefined) {
    if (valuesFile === undefined) throw new Error('a rotated header needs its values file')
    const name = luaString(job.rotateHeader.name)
    lines.push(
      'local values = {}',
      `for line in io.lines(${luaString(valuesFile)}) do values[#values + 1] = line end`,
      // A value picked at random per request, as the autocannon path does.
      `request = function()\n  wrk.headers[${name}] = values[math.random(#values)]\n  return wrk.format()\nend`
    )
  }
  lines.push(
    'done = function(summary, latency, requests)',
    `  io.write(string.format(${luaString(`${RESULT_MARKER}{"durationMicros":%d,"requests":%d,"status":%d,"connect":%d,"read":%d,"write":%d,"timeout":%d,"p50Micros":%d,"p99Micros":%d}\n`)},`,
    '    summary.duration, summary.requests, summary.errors.status, summary.errors.connect, summary.errors.read, summary.errors.write, summary.errors.timeout,',
    '    latency:percentile(50), latency:percentile(99)))',
    'end'
  )
  return `${lines.join('\n')}\n`
}

interface WrkFigures { durationMicros: number, requests: number, status: number, connect: number, read: number, write: number, timeout: number, p50Micros: number, p99Micros: number }

/**
 * wrk's figures as a load outcome. wrk counts answers with a status of 400 or more
 * (`status`), not each status: they are reported under "≥400", which no check takes
 * for a success.
 */
export function parseWrkOutput (stdout: string): LoadOutcome {
  const line = stdout.split('\n').find((l) => l.startsWith(RESULT_MARKER))
  if (line === undefined) throw new Error(`wrk printed no result:\n${stdout.slice(-2000)}`)
  const f = JSON.parse(line.slice(RESULT_MARKER.length)) as WrkFigures
  const statusCounts: Record<string, number> = {}
  if (f.requests - f.status > 0) statusCounts['2xx'] = f.requests - f.status
  if (f.status > 0) statusCounts['≥400'] = f.status
  return {
    requestsPerSecond: f.requests / (f.durationMicros / 1e6),
    p50Ms: f.p50Micros / 1000,
    p99Ms: f.p99Micros / 1000,
    non2xx: f.status,
    errors: f.connect + f.read + f.write,
    timeouts: f.timeout,
    statusCounts,
    totalRequests: f.requests
  }
}

export interface WrkOptions { binary: string, threads: number, scratchDir: string }

let scripts = 0

/** One wrk run of `job` for its duration, in whole seconds (wrk takes no fraction). */
export async function runWrk (options: WrkOptions, job: LoadJob): Promise<LoadOutcome> {
  const id = ++scripts
  let valuesFile: string | undefined
  if (job.rotateHeader !== undefined) {
    valuesFile = join(options.scratchDir, `wrk-${id}.values`)
    await writeFile(valuesFile, `${job.rotateHeader.values.join('\n')}\n`)
  }
  const script = join(options.scratchDir, `wrk-${id}.lua`)
  await writeFile(script, wrkScript(job, valuesFile))
  const seconds = Math.max(1, Math.ceil(job.durationSeconds))
  const threads = Math.min(options.threads, job.connections)
  const { stdout } = await run(options.binary, ['-t', String(threads), '-c', String(job.connections), '-d', `${seconds}s`, '--timeout', '10s', '-s', script, job.url], { maxBuffer: 4 * 1024 * 1024 })
  return parseWrkOutput(stdout)
}

export async function wrkVersion (binary: string): Promise<string> {
  // wrk prints its version in the usage text, and exits 1 doing so.
  const output = await run(binary, ['--version']).then(({ stdout }) => stdout, (err: { stdout?: string }) => err.stdout ?? '')
  return /^wrk (\S+)/m.exec(output)?.[1] ?? 'unknown version'
}
