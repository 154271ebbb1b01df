import { spawn, type ChildProcessByStdio } from 'node:child_process'
import type { Readable } from 'node:stream'
import type { Teardown } from './temp.js'
import { REPO_ROOT, repoPath } from './repo-root.js'
import { nodeCommand } from './node-command.js'

export { REPO_ROOT }

/** A compiled entry point (`npm test` builds before tap runs), e.g. `dist/demo/start.js`. */
export function builtEntry (path: string): string {
  return repoPath(path)
}

export interface Exit { code: number | null, signal: NodeJS.Signals | null }

export interface ServiceProcess {
  child: ChildProcessByStdio<null, Readable, Readable>
  stdout: () => string
  stderr: () => string
  /** Resolves true once stdout matches `readyWhen`, false if the process exits or the wait times out first. */
  ready: Promise<boolean>
  exited: Promise<Exit>
}

const READY_TIMEOUT_MS = 30_000

/**
 * The process's exit, or `{ code: null, signal: null }` if it is still running after
 * `ms`. The timer is cleared on exit: a pending one would keep the test file alive.
 */
export async function exitWithin (process: Pick<ServiceProcess, 'exited'>, ms: number): Promise<Exit> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<Exit>((resolve) => { timer = setTimeout(() => { resolve({ code: null, signal: null }) }, ms) })
  try {
    return await Promise.race([process.exited, late])
  } finally {
    clearTimeout(timer)
  }
}

/** Fastify's own line once a listener is bound: a process that prints it has started. */
export const LISTENING = /Server listening at/

/**
 * The exit of a process that must refuse to start: waits for it to exit, but gives up
 * at once if it reports it is listening (it started anyway), so a slow machine can be
 * given a generous `ms` without slowing down the failure.
 */
export async function exitBeforeListening (process: Pick<ServiceProcess, 'exited' | 'ready'>, ms: number): Promise<Exit> {
  const started = process.ready.then(async (listening) => await (listening ? { code: null, signal: null } : process.exited))
  return await exitWithin({ exited: started }, ms)
}

/**
 * Runs a built entry point as a real child process with exactly `env` (plus PATH),
 * collecting its output; killed at teardown if it is still running.
 */
export function startProcess (t: Teardown, entry: string, env: Record<string, string>, readyWhen: RegExp, cwd = REPO_ROOT): ServiceProcess {
  const child = spawn(...nodeCommand([builtEntry(entry)]), { cwd, env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (chunk: Buffer) => { stdout += chunk.toString() })
  child.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString() })
  const exited = new Promise<Exit>((resolve) => { child.once('exit', (code, signal) => { resolve({ code, signal }) }) })
  const ready = new Promise<boolean>((resolve) => {
    const timer = setTimeout(() => { resolve(false) }, READY_TIMEOUT_MS)
    const check = (): void => { if (readyWhen.test(stdout)) { clearTimeout(timer); resolve(true) } }
    child.stdout.on('data', check)
    void exited.then(() => { clearTimeout(timer); resolve(false) })
  })
  t.teardown(() => { if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL') })
  return { child, stdout: () => stdout, stderr: () => stderr, ready, exited }
}
