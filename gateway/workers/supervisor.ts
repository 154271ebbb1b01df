import cluster, { type Worker } from 'node:cluster'
import type { Logger } from 'pino'
import { WORKER_MARKER, type PrimaryOrder } from './protocol.js'

/** How a worker that died is replaced: after a delay that doubles while they keep dying young. */
export interface RestartPolicy {
  /** The delay after a worker that lived stableAfterMs; each death of a younger one in a row doubles it. */
  firstDelayMs: number
  maxDelayMs: number
  /** A worker that served this long resets the delay: it was not a crash loop. */
  stableAfterMs: number
  /** The primary gives up (exit 1) once every worker has failed to start this many times in a row. */
  failedStartsToGiveUp: number
}

export const RESTART_POLICY: Readonly<RestartPolicy> = Object.freeze({
  firstDelayMs: 250,
  maxDelayMs: 10_000,
  stableAfterMs: 10_000,
  failedStartsToGiveUp: 3
})

/** What the primary waits beyond the workers' own grace before it SIGKILLs the ones still running. */
const STOP_MARGIN_MS = 5_000

/** A worker that exited before it listened, while the gateway was starting: the exit code the primary should exit with. */
export class StartFailure extends Error {
  constructor (readonly slot: number, readonly exitCode: number) {
    super(`worker ${slot} exited with code ${exitCode} before it listened`)
    this.name = 'StartFailure'
  }
}

interface Exit { code: number | null, signal: string | null }

/** One of the N places a worker runs in; its number (1..N) stays across replacements. */
interface Slot {
  number: number
  worker: Worker | null
  exited: Promise<Exit> | null
  listeningSince: number | null
  /** Deaths in a row of workers that lived less than stableAfterMs. */
  youngDeaths: number
  /** Exits in a row before listening. */
  failedStarts: number
  restartTimer: NodeJS.Timeout | null
}

export interface SupervisorOptions {
  workers: number
  log: Logger
  policy?: RestartPolicy
  /** Every time a replacement is forked (a metric). */
  onRestart?: () => void
  /** Called once no worker can be started any more (failedStartsToGiveUp): the primary exits. */
  onGiveUp: () => void
  now?: () => number
}

/**
 * Forks and keeps `workers` gateway workers under node:cluster: they share the
 * listening socket the primary holds. The first worker starts alone, so a bad upstreams
 * file or a port that cannot be taken fails the start once, before the others are
 * forked; once all listen, a worker that dies is replaced with a backoff, and none is
 * while the gateway stops.
 */
export function createSupervisor (options: SupervisorOptions) {
  const { log, onRestart, onGiveUp } = options
  const policy = options.policy ?? RESTART_POLICY
  const now = options.now ?? Date.now
  const slots: Slot[] = Array.from({ length: options.workers }, (_, i) => ({
    number: i + 1, worker: null, exited: null, listeningSince: null, youngDeaths: 0, failedStarts: 0, restartTimer: null
  }))
  let started = false
  let stopping = false

  /** Forks a worker into `slot`; resolves true once it listens, false if it exits first. */
  function fork (slot: Slot): Promise<boolean> {
    const worker = cluster.fork({ [WORKER_MARKER]: '1' })
    slot.worker = worker
    slot.listeningSince = null
    const pid = worker.process.pid
    slot.exited = new Promise((resolve) => {
      worker.once('exit', (code, signal) => {
        if (slot.worker === worker) slot.worker = null
        resolve({ code, signal })
        onExit(slot, { code, signal }, pid)
      })
    })
    // A worker whose channel breaks as it dies must not take the primary down with an 'error' event.
    worker.on('error', (err) => { log.warn({ err, worker: slot.number, pid }, 'worker channel error') })
    return new Promise((resolve) => {
      worker.once('listening', () => {
        slot.listeningSince = now()
        slot.failedStarts = 0
        resolve(true)
      })
      void slot.exited?.then(() => { resolve(false) })
    })
  }

  function onExit (slot: Slot, exit: Exit, pid: number | undefined): void {
    const listened = slot.listeningSince !== null
    if (stopping) {
      log.info({ worker: slot.number, pid, ...exit }, 'worker exited')
      return
    }
    // While starting, start() reports the failure; nothing is replaced.
    if (!started) return
    const lived = listened ? now() - (slot.listeningSince as number) : 0
    slot.youngDeaths = lived >= policy.stableAfterMs ? 0 : slot.youngDeaths + 1
    if (!listened) slot.failedStarts++
    if (slots.every((s) => s.failedStarts >= policy.failedStartsToGiveUp)) {
      log.fatal({ failedStarts: policy.failedStartsToGiveUp, ...exit }, 'no worker can be started: giving up')
      onGiveUp()
      return
    }
    const delayMs = Math.min(policy.maxDelayMs, policy.firstDelayMs * 2 ** slot.youngDeaths)
    log.error({ worker: slot.number, pid, ...exit, listened, restartInMs: delayMs }, 'worker exited unexpectedly: replacing it')
    slot.restartTimer = setTimeout(() => {
      slot.restartTimer = null
      if (stopping) return
      onRestart?.()
      void fork(slot).then((listening) => {
        if (listening) log.info({ worker: slot.number, pid: slot.worker?.process.pid }, 'replacement worker listening')
      })
    }, delayMs)
  }

  return {
    /** Resolves once every worker listens; rejects with a StartFailure, the others left running for stop(), if one exits first. */
    async start (): Promise<void> {
      const [first, ...others] = slots as [Slot, ...Slot[]]
      const startSlot = async (slot: Slot): Promise<void> => {
        if (await fork(slot)) return
        const { code } = await (slot.exited as Promise<Exit>)
        throw new StartFailure(slot.number, code === null || code === 0 ? 1 : code)
      }
      await startSlot(first)
      await Promise.all(others.map(startSlot))
      started = true
      log.info({ workers: slots.map((s) => s.worker?.process.pid) }, 'every worker is listening')
    },

    /** Sends an order to every worker that can hear it; one still starting reads the file anyway. */
    order (order: PrimaryOrder): void {
      for (const slot of slots) {
        const worker = slot.worker
        if (worker?.isConnected() === true) worker.send(order, (err) => { if (err !== null) log.warn({ err, worker: slot.number }, 'order not delivered') })
      }
    },

    /** Workers listening now. */
    listening: (): number => slots.filter((s) => s.worker !== null && s.listeningSince !== null).length,

    stopping: (): boolean => stopping,

    /**
     * Drains every worker (each within `graceMs`, its own GATEWAY_SHUTDOWN_GRACE_SECONDS)
     * and resolves once all have exited: true when every one exited 0. Those still running
     * STOP_MARGIN_MS after the grace are killed.
     */
    async stop (graceMs: number): Promise<boolean> {
      stopping = true
      const running = slots.filter((s) => s.worker !== null)
      for (const slot of slots) {
        if (slot.restartTimer !== null) clearTimeout(slot.restartTimer)
        slot.restartTimer = null
      }
      for (const slot of running) {
        const worker = slot.worker as Worker
        if (worker.isConnected()) worker.send({ type: 'portier:drain' } satisfies PrimaryOrder, () => {})
        else worker.process.kill('SIGTERM')
      }
      let timer: NodeJS.Timeout | undefined
      const late = new Promise<'late'>((resolve) => { timer = setTimeout(() => { resolve('late') }, graceMs + STOP_MARGIN_MS) })
      const exits = Promise.all(running.map(async (s) => await (s.exited as Promise<Exit>)))
      const outcome = await Promise.race([exits, late])
      clearTimeout(timer)
      if (outcome === 'late') {
        for (const slot of running) {
          if (slot.worker !== null) {
            log.error({ worker: slot.number, pid: slot.worker.process.pid }, 'worker still running after the grace: killed')
            slot.worker.process.kill('SIGKILL')
          }
        }
        await exits
        return false
      }
      return outcome.every((exit) => exit.code === 0)
    },

    /** SIGKILLs every worker: a second signal, or a primary that cannot go on. */
    kill (): void {
      stopping = true
      for (const slot of slots) slot.worker?.process.kill('SIGKILL')
    }
  }
}

export type Supervisor = ReturnType<typeof createSupervisor>
