import { setTimeout as sleep } from 'node:timers/promises'
import type { EventBus } from '../../common/event-bus.js'
import type { OutboxStore } from '../store/outbox-store.js'
import type { Clock } from './clock.js'

/** How often a writer looks whether the server has taken its events. */
const RELAYED_CHECK_INTERVAL_MS = 25

export interface OutboxEventBus extends EventBus {
  /** Whether any event was published through this bus. */
  wrote: () => boolean
  /**
   * Waits until every event published through this bus has been taken from the outbox
   * by an identity server; false when some are still there after `timeoutMs`.
   */
  relayed: (timeoutMs: number) => Promise<boolean>
}

/**
 * The bus of a process that changes the database beside the identity server (the
 * CLI): each event is written to the outbox, which the server relays on its own bus
 * (`npm start`'s in-process one, or Redis), and then published on `direct` too (Redis
 * when configured, so gateways hear it even while identity is down; a no-op
 * otherwise). The row is written synchronously, in the same tick as the change's
 * commit: only a process killed between the two statements loses the event.
 */
export function createOutboxEventBus (options: { store: OutboxStore, clock: Clock, direct: EventBus }): OutboxEventBus {
  const { store, clock, direct } = options
  const written: number[] = []
  return {
    async publish (event) {
      written.push(store.append(JSON.stringify(event), clock.now()))
      await direct.publish(event)
    },
    subscribe: async (listener, onResubscribed) => await direct.subscribe(listener, onResubscribed),
    receiving: () => direct.receiving(),
    close: async () => { await direct.close() },
    wrote: () => written.length > 0,
    async relayed (timeoutMs) {
      const deadline = Date.now() + timeoutMs
      while (store.waiting(written) > 0) {
        if (Date.now() >= deadline) return false
        await sleep(RELAYED_CHECK_INTERVAL_MS)
      }
      return true
    }
  }
}
