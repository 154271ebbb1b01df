import type { Db } from './db.js'

/**
 * The audit trail's SQL: appending a chained record, reading pages of it, pruning
 * from its start. The chain's rules (what is hashed, what verifies) are the service's
 * (services/audit.ts); this module only keeps rows.
 */

/** A record as stored; `changes` is the JSON text the hash was computed over (parsed again to verify). */
export interface AuditRow {
  seq: number
  id: string
  at: number
  action: string
  outcome: 'success' | 'failure'
  errorCode: string | null
  actorType: string
  actorId: string | null
  sourceIp: string | null
  sourceUserAgent: string | null
  requestId: string | null
  targetType: string | null
  targetId: string | null
  targetName: string | null
  changes: string | null
  prevHash: string
  hash: string
}

/** The end of the chain a new record links to: the last record, else the anchor, else nothing (seq 0). */
export interface ChainLink { seq: number, hash: string }

export interface AuditAnchor extends ChainLink { prunedAt: number }

/** Which records a listing or an export takes; every member narrows. */
export interface AuditFilter {
  actorType?: string
  actorId?: string
  action?: string
  outcome?: 'success' | 'failure'
  targetType?: string
  targetId?: string
  /** ms, inclusive. */
  from?: number
  /** ms, exclusive. */
  to?: number
}

export type AuditOrder = 'newest' | 'oldest'

interface AuditDbRow {
  seq: number
  id: string
  at: number
  action: string
  outcome: 'success' | 'failure'
  error_code: string | null
  actor_type: string
  actor_id: string | null
  source_ip: string | null
  source_user_agent: string | null
  request_id: string | null
  target_type: string | null
  target_id: string | null
  target_name: string | null
  changes: string | null
  prev_hash: string
  hash: string
}

function toRow (row: AuditDbRow): AuditRow {
  return {
    seq: row.seq,
    id: row.id,
    at: row.at,
    action: row.action,
    outcome: row.outcome,
    errorCode: row.error_code,
    actorType: row.actor_type,
    actorId: row.actor_id,
    sourceIp: row.source_ip,
    sourceUserAgent: row.source_user_agent,
    requestId: row.request_id,
    targetType: row.target_type,
    targetId: row.target_id,
    targetName: row.target_name,
    changes: row.changes,
    prevHash: row.prev_hash,
    hash: row.hash
  }
}

/** Filter members and the SQL condition each adds; built once, so no SQL is assembled from input. */
const CONDITIONS: ReadonlyArray<readonly [keyof AuditFilter, string]> = [
  ['actorType', 'actor_type = @actorType'],
  ['actorId', 'actor_id = @actorId'],
  ['action', 'action = @action'],
  ['outcome', 'outcome = @outcome'],
  ['targetType', 'target_type = @targetType'],
  ['targetId', 'target_id = @targetId'],
  ['from', 'at >= @from'],
  ['to', 'at < @to']
]

export type AuditStore = ReturnType<typeof createAuditStore>

export function createAuditStore (db: Db) {
  const statements = {
    last: db.prepare('SELECT seq, hash FROM audit_log ORDER BY seq DESC LIMIT 1'),
    anchor: db.prepare('SELECT seq, hash, pruned_at FROM audit_anchor WHERE id = 1'),
    insert: db.prepare(`INSERT INTO audit_log (seq, id, at, action, outcome, error_code, actor_type, actor_id, source_ip,
        source_user_agent, request_id, target_type, target_id, target_name, changes, prev_hash, hash)
      VALUES (@seq, @id, @at, @action, @outcome, @errorCode, @actorType, @actorId, @sourceIp,
        @sourceUserAgent, @requestId, @targetType, @targetId, @targetName, @changes, @prevHash, @hash)`),
    bySeq: db.prepare('SELECT * FROM audit_log WHERE seq = ?'),
    chainPage: db.prepare('SELECT * FROM audit_log WHERE seq > ? AND seq <= ? ORDER BY seq LIMIT ?'),
    lastBefore: db.prepare('SELECT seq, hash FROM audit_log WHERE at < ? ORDER BY seq DESC LIMIT 1'),
    deleteThrough: db.prepare('DELETE FROM audit_log WHERE seq <= ?'),
    setAnchor: db.prepare(`INSERT INTO audit_anchor (id, seq, hash, pruned_at) VALUES (1, @seq, @hash, @prunedAt)
      ON CONFLICT(id) DO UPDATE SET seq = excluded.seq, hash = excluded.hash, pruned_at = excluded.pruned_at`)
  }
  // One statement per combination of filter members and order, prepared on first use.
  const pages = new Map<string, ReturnType<Db['prepare']>>()

  function pageStatement (filter: AuditFilter, order: AuditOrder) {
    const used = CONDITIONS.filter(([member]) => filter[member] !== undefined)
    const key = `${order}:${used.map(([member]) => member).join(',')}`
    let statement = pages.get(key)
    if (statement === undefined) {
      const where = [order === 'newest' ? 'seq < @after' : 'seq > @after', ...used.map(([, sql]) => sql)].join(' AND ')
      statement = db.prepare(`SELECT * FROM audit_log WHERE ${where} ORDER BY seq ${order === 'newest' ? 'DESC' : 'ASC'} LIMIT @limit`)
      pages.set(key, statement)
    }
    return statement
  }

  function anchor (): AuditAnchor | null {
    const row = statements.anchor.get() as { seq: number, hash: string, pruned_at: number } | undefined
    return row === undefined ? null : { seq: row.seq, hash: row.hash, prunedAt: row.pruned_at }
  }

  function last (): ChainLink | null {
    return (statements.last.get() as ChainLink | undefined) ?? null
  }

  return {
    anchor,
    /** The last record, or the anchor when pruning left none; null for an empty trail. */
    tip: (): ChainLink | null => last() ?? anchor(),

    /**
     * Appends the record `build` makes from the chain's tip, in an IMMEDIATE transaction
     * (a savepoint inside a caller's): the tip cannot move between the read and the
     * insert, even with another process (the CLI) writing the same file.
     */
    append: (build: (tip: ChainLink | null) => AuditRow): AuditRow => db.transaction(() => {
      const row = build(last() ?? anchor())
      statements.insert.run(row)
      return row
    }).immediate(),

    bySeq: (seq: number): AuditRow | null => {
      const row = statements.bySeq.get(seq) as AuditDbRow | undefined
      return row === undefined ? null : toRow(row)
    },

    /** Up to `limit` records after `afterSeq` and up to `throughSeq`, in chain order. */
    chainPage: (afterSeq: number, throughSeq: number, limit: number): AuditRow[] =>
      (statements.chainPage.all(afterSeq, throughSeq, limit) as AuditDbRow[]).map(toRow),

    /** A page of matching records past `afterSeq` (exclusive) in `order`; `afterSeq` null starts at the order's beginning. */
    page: (filter: AuditFilter, order: AuditOrder, afterSeq: number | null, limit: number): AuditRow[] => {
      const after = afterSeq ?? (order === 'newest' ? Number.MAX_SAFE_INTEGER : 0)
      const params = { ...filter, after, limit }
      return (pageStatement(filter, order).all(params) as AuditDbRow[]).map(toRow)
    },

    /**
     * Deletes every record older than `before` (ms), in one IMMEDIATE transaction that
     * moves the anchor to the last one deleted and then runs `alongside` (which records
     * the pruning): null when none was old enough.
     */
    pruneBefore: (before: number, now: number, alongside: (through: ChainLink, deleted: number) => void): { through: ChainLink, deleted: number } | null =>
      db.transaction(() => {
        const through = statements.lastBefore.get(before) as ChainLink | undefined
        if (through === undefined) return null
        const deleted = statements.deleteThrough.run(through.seq).changes
        statements.setAnchor.run({ seq: through.seq, hash: through.hash, prunedAt: now })
        alongside(through, deleted)
        return { through, deleted }
      }).immediate()
  }
}
