import type { Db } from './db.js'

/** One event waiting to be published by the identity server. */
export interface OutboxRow {
  id: number
  /** The event as JSON, exactly as it goes on the bus. */
  event: string
  createdAt: number
}

interface OutboxRowData { id: number, event: string, created_at: number }

export interface OutboxBounds {
  /** Rows older than this are dropped when a new one is written (ms). */
  retentionMs: number
  /** At most this many rows are kept; the oldest go first. */
  maxRows: number
}

/**
 * A day covers the longest cache an event can invalidate (a gateway's L2 entry lives
 * at most 86 400 s; access tokens 600 s): an older event changes nothing. The row cap
 * only bounds the file when no server ever relays.
 */
export const OUTBOX_BOUNDS: OutboxBounds = Object.freeze({ retentionMs: 86_400_000, maxRows: 10_000 })

export type OutboxStore = ReturnType<typeof createOutboxStore>

/**
 * The `event_outbox` table: a process that changes the database without a bus to the
 * gateways (the CLI) appends the events here; the identity server takes them out and
 * publishes them. Bounded on every append, so a file that no server ever opens does
 * not grow without end.
 */
export function createOutboxStore (db: Db, bounds: OutboxBounds = OUTBOX_BOUNDS) {
  const statements = {
    insert: db.prepare('INSERT INTO event_outbox (event, created_at) VALUES (?, ?)'),
    pruneOld: db.prepare('DELETE FROM event_outbox WHERE created_at < ?'),
    pruneExcess: db.prepare('DELETE FROM event_outbox WHERE id <= (SELECT max(id) FROM event_outbox) - ?'),
    oldest: db.prepare('SELECT id, event, created_at FROM event_outbox ORDER BY id LIMIT ?'),
    remove: db.prepare('DELETE FROM event_outbox WHERE id = ?'),
    present: db.prepare('SELECT count(*) FROM event_outbox WHERE id = ?').pluck()
  }
  const append = db.transaction((event: string, now: number): number => {
    statements.pruneOld.run(now - bounds.retentionMs)
    const id = Number(statements.insert.run(event, now).lastInsertRowid)
    statements.pruneExcess.run(bounds.maxRows)
    return id
  })
  const remove = db.transaction((ids: readonly number[]) => {
    for (const id of ids) statements.remove.run(id)
  })

  return {
    /** Appends one event (and drops what is past the bounds) in one transaction; returns its id. */
    append: (event: string, now: number): number => append(event, now),

    /** The oldest waiting rows, at most `limit`. */
    oldest: (limit: number): OutboxRow[] =>
      (statements.oldest.all(limit) as OutboxRowData[]).map((row) => ({ id: row.id, event: row.event, createdAt: row.created_at })),

    remove: (ids: readonly number[]): void => { remove(ids) },

    /** How many of these rows are still waiting. */
    waiting: (ids: readonly number[]): number => ids.reduce((count, id) => count + (statements.present.get(id) as number), 0),

    /**
     * SQLite's `data_version`: it changes when another connection commits to the file,
     * never for this connection's own commits, so an unchanged value means there is
     * nothing new to read.
     */
    dataVersion: (): number => db.pragma('data_version', { simple: true }) as number
  }
}
