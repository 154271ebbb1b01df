import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { setTimeout as sleep } from 'node:timers/promises'
import { request } from 'undici'

/** A process the bench started: a server on loopback. */
export interface Service {
  name: string
  pid: number
  /** `http://127.0.0.1:<port>` of its (main) listener. */
  url: string
  /** The last lines it wrote (stdout and stderr), for error messages. */
  logTail: () => string
  stop: () => Promise<void>
}

export interface ServiceSpec {
  name: string
  command: string
  args: string[]
  env: Record<string, string>
  url: string
  /** Path answered with 2xx once the service can take load. */
  readyPath: string
  cwd?: string
}

const READY_TIMEOUT_MS = 60_000
const STOP_TIMEOUT_MS = 15_000

async function answers (url: string): Promise<boolean> {
  try {
    const response = await request(url, { headersTimeout: 1_000, bodyTimeout: 1_000 })
    await response.body.dump()
    return response.statusCode >= 200 && response.statusCode < 300
  } catch {
    return false
  }
}

/** Stops a child with SIGTERM, then SIGKILL if it has not exited in time. */
export async function stopChild (child: ChildProcess, timeoutMs = STOP_TIMEOUT_MS): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = once(child, 'exit')
  child.kill('SIGTERM')
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs)
  await exited
  clearTimeout(timer)
}

const LOG_TAIL_BYTES = 8_192

/**
 * Keeps the end of what a process writes. Its log is read (services log a line per
 * request, as in production, so the cost of logging is measured) but not stored: a
 * full run would write gigabytes.
 */
function tailOf (child: ChildProcess): () => string {
  let tail = ''
  const keep = (chunk: Buffer): void => { tail = (tail + chunk.toString()).slice(-LOG_TAIL_BYTES) }
  child.stdout?.on('data', keep)
  child.stderr?.on('data', keep)
  return () => tail
}

/**
 * Starts a server process with exactly `env` (plus PATH) and waits until `readyPath`
 * answers 2xx. A process that exits first, or never gets ready, fails the bench with
 * the tail of its log.
 */
export async function startService (spec: ServiceSpec): Promise<Service> {
  const child = spawn(spec.command, spec.args, {
    cwd: spec.cwd,
    env: { PATH: process.env.PATH ?? '', ...spec.env },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  const logTail = tailOf(child)
  let exited = false
  child.once('exit', () => { exited = true })
  const deadline = Date.now() + READY_TIMEOUT_MS
  while (!await answers(spec.url + spec.readyPath)) {
    if (exited) throw new Error(`${spec.name} exited before it was ready:\n${logTail()}`)
    if (Date.now() > deadline) {
      await stopChild(child)
      throw new Error(`${spec.name} was not ready within ${READY_TIMEOUT_MS / 1000} s:\n${logTail()}`)
    }
    await sleep(100)
  }
  if (child.pid === undefined) throw new Error(`${spec.name} has no pid`)
  return { name: spec.name, pid: child.pid, url: spec.url, logTail, stop: async () => { await stopChild(child) } }
}
