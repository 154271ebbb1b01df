import { fork, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { fileURLToPath } from 'node:url'
import { stopChild } from '../processes/service.js'
import type { LoadJob, LoadOutcome } from './job.js'

type Reply = { ok: true, outcome: LoadOutcome } | { ok: false, error: string }

/** The orchestrator's handle on the load generator process (bench/load/worker.ts). */
export class LoadDriver {
  private readonly child: ChildProcess
  private readonly exited: Promise<never>

  /** `requestsPerRun`: every run sends that many requests instead of running for its duration (a harness check). */
  constructor (private readonly options: { requestsPerRun?: number } = {}) {
    this.child = fork(fileURLToPath(new URL('./worker.js', import.meta.url)), [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
    this.exited = once(this.child, 'exit').then(() => { throw new Error('the load generator exited') })
    this.exited.catch(() => {}) // observed by run(); an exit between runs is not an error
  }

  async run (job: LoadJob): Promise<LoadOutcome> {
    const answer = once(this.child, 'message') as Promise<[Reply]>
    const requests = this.options.requestsPerRun
    this.child.send(requests !== undefined && job.amount === undefined ? { ...job, amount: Math.max(requests, job.connections) } : job)
    const [reply] = await Promise.race([answer, this.exited])
    if (!reply.ok) throw new Error(`load run against ${job.url} failed: ${reply.error}`)
    return reply.outcome
  }

  async close (): Promise<void> { await stopChild(this.child) }
}
