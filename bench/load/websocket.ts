import { execFile } from 'node:child_process'
import { createHistogram } from 'node:perf_hooks'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { promisify } from 'node:util'
import { WebSocket } from 'ws'
import type { LoadJob, LoadOutcome } from './job.js'

/**
 * WebSocket echo load: `connections` sockets, each sending its message, waiting for the
 * echo, and sending again, for `durationSeconds`. A message echoed counts as one
 * request (`requestsPerSecond` is messages per second), its round trip as its latency.
 * It runs in a process of its own, as the other generators do, so that its CPU is not
 * the orchestrator's: `runWebSocketLoad` starts it and reads its one line of JSON.
 */

const run = promisify(execFile)

export async function runWebSocketLoad (job: LoadJob): Promise<LoadOutcome> {
  const { stdout } = await run(process.execPath, [fileURLToPath(import.meta.url), JSON.stringify(job)], { maxBuffer: 1_048_576 })
  return JSON.parse(stdout) as LoadOutcome
}

async function openSocket (job: LoadJob): Promise<WebSocket> {
  const socket = new WebSocket(job.url.replace(/^http/, 'ws'), { headers: job.headers, perMessageDeflate: false })
  return await new Promise((resolve, reject) => {
    socket.once('unexpected-response', (_request, response) => { reject(new Error(`the upgrade was answered ${response.statusCode ?? 0}`)) })
    socket.once('error', reject)
    // The first message may be the upstream's greeting: the loop starts after it, or at once.
    socket.once('open', () => { setTimeout(() => { socket.removeAllListeners('message'); resolve(socket) }, 50) })
    socket.on('message', () => {})
  })
}

async function load (job: LoadJob): Promise<LoadOutcome> {
  const message = job.websocketMessage ?? 'ping'
  const sockets = await Promise.all(Array.from({ length: job.connections }, async () => await openSocket(job)))
  // Round trips in µs, in a histogram as the other generators keep them: memory stays flat however long the run.
  const latencyMicros = createHistogram()
  let errors = 0
  const stopAt = performance.now() + job.durationSeconds * 1000
  const started = performance.now()
  await Promise.all(sockets.map(async (socket) => await new Promise<void>((resolve) => {
    let sentAt = 0
    const send = (): void => {
      if (performance.now() >= stopAt) { resolve(); return }
      sentAt = performance.now()
      socket.send(message)
    }
    socket.on('message', () => {
      latencyMicros.record(Math.max(1, Math.round((performance.now() - sentAt) * 1000)))
      send()
    })
    socket.once('close', () => { errors++; resolve() })
    send()
  })))
  const seconds = (performance.now() - started) / 1000
  for (const socket of sockets) socket.terminate()
  const answered = latencyMicros.count
  const millis = (percentile: number): number => answered === 0 ? 0 : latencyMicros.percentile(percentile) / 1000
  return {
    requestsPerSecond: answered / seconds,
    p50Ms: millis(50),
    p99Ms: millis(99),
    non2xx: 0,
    errors,
    timeouts: 0,
    statusCounts: { 200: answered },
    totalRequests: answered
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const job = JSON.parse(process.argv[2] ?? '{}') as LoadJob
  process.stdout.write(`${JSON.stringify(await load(job))}\n`)
}
