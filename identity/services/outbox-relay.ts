import type { EventBus } from '../../common/event-bus.js'
import { parseAuthEvent } from '../../common/events.js'
import type { OutboxStore } from '../store/outbox-store.js'

/**
 * How often the server looks for events another process wrote. A look is one pragma
 * read while nothing changed; this bounds how late a CLI change reaches the gateways.
 */
export const OUTBOX_POLL_INTERVAL_MS = 100
/** Rows published per read; more are read at once when there were this many. */
const RELAY_BATCH_ROWS = 100

export interface RelayLog {
  warn: (fields: Record<string, unknown>, msg: string) => void
}

export interface OutboxRelayOptions {
  store: OutboxStore
  /** The server's own bus: the in-process one of `npm start`, or Redis. */
  events: EventBus
  log: RelayLog
  intervalMs?: number
}

export interface OutboxRelay {
  /** Stops polling and waits for a pass under way, so that the database can be closed after it. */
  stop: () => Promise<void>
}

/**
 * Publishes on the server's bus the events that other processes on the same database
 * (the CLI) left in the outbox, then deletes them: at once for rows written while no
 * server ran, then within `intervalMs` of each new commit. Publishing comes before the
 * delete, so a crash in between publishes an event twice, never zero times; events are
 * invalidations, and a second one only evicts again.
 */
export function startOutboxRelay (options: OutboxRelayOptions): OutboxRelay {
  const { store, events, log } = options
  const intervalMs = options.intervalMs ?? OUTBOX_POLL_INTERVAL_MS
  let seenVersion: number | null = null
  let stopped = false
  let timer: NodeJS.Timeout | undefined
  let pass: Promise<void> = Promise.resolve()

  async function relay (): Promise<void> {
    const version = store.dataVersion()
    if (version === seenVersion) return
    // Read before the rows: a commit landing during this pass changes it again, and the next pass reads that commit.
    seenVersion = version
    let rows
    do {
      rows = store.oldest(RELAY_BATCH_ROWS)
      for (const row of rows) {
        const event = parseAuthEvent(row.event)
        if (event === null) log.warn({ outboxId: row.id }, 'dropped an unreadable event from the outbox')
        else await events.publish(event)
      }
      store.remove(rows.map((row) => row.id))
    } while (rows.length === RELAY_BATCH_ROWS && !stopped)
  }

  function run (): void {
    pass = relay()
      .catch((err: unknown) => {
        // SQLITE_BUSY beyond the busy timeout, say: look again next time whatever the version.
        seenVersion = null
        log.warn({ err }, 'could not relay events from the outbox; retrying')
      })
      .finally(() => {
        if (stopped) return
        timer = setTimeout(run, intervalMs)
        timer.unref()
      })
  }
  run()

  return {
    async stop () {
      stopped = true
      clearTimeout(timer)
      await pass
    }
  }
}
