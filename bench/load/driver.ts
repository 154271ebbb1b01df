import { fork, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { fileURLToPath } from 'node:url'
import { stopChild } from '../processes/service.js'
import type { LoadJob, LoadOutcome } from './job.js'
import { runWebSocketLoad } from './websocket.js'
import { runWrk, wrkCanRun, type WrkOptions } from './wrk.js'

type Reply = { ok: true, outcome: LoadOutcome } | { ok: false, error: string }

export interface LoadDriverOptions {
  /** Every run sends that many requests instead of running for its duration (a harness check; autocannon only). */
  requestsPerRun?: number
  /** wrk, for every job it can run; null: autocannon for all. */
  wrk?: WrkOptions | null
}

/**
 * The orchestrator's handle on the load generators: wrk (a process per run) for the
 * jobs it can run, and the autocannon process (bench/load/worker.ts) for the rest.
 */
export class LoadDriver {
  private readonly child: ChildProcess
  private readonly exited: Promise<never>

  constructor (private readonly options: LoadDriverOptions = {}) {
    this.child = fork(fileURLToPath(new URL('./worker.js', import.meta.url)), [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
    this.exited = once(this.child, 'exit').then(() => { throw new Error('the load generator exited') })
    this.exited.catch(() => {}) // observed by run(); an exit between runs is not an error
  }

  /** Which generator runs `job`. */
  generatorFor (job: LoadJob): 'wrk' | 'autocannon' {
    const wrk = this.options.wrk ?? null
    return wrk !== null && this.options.requestsPerRun === undefined && wrkCanRun(job) ? 'wrk' : 'autocannon'
  }

  async run (job: LoadJob): Promise<LoadOutcome> {
    if (job.websocketMessage !== undefined) return await runWebSocketLoad(job)
    if (this.generatorFor(job) === 'wrk') return await runWrk(this.options.wrk as WrkOptions, job)
    const answer = once(this.child, 'message') as Promise<[Reply]>
    const requests = this.options.requestsPerRun
    this.child.send(requests !== undefined && job.amount === undefined ? { ...job, amount: Math.max(requests, job.connections) } : job)
    const [reply] = await Promise.race([answer, this.exited])
    if (!reply.ok) throw new Error(`load run against ${job.url} failed: ${reply.error}`)
    return reply.outcome
  }

  async close (): Promise<void> { await stopChild(this.child) }
}
