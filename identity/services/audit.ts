import { createHash } from 'node:crypto'
import { setImmediate as nextTurn } from 'node:timers/promises'
import canonicalize from 'canonicalize'
import { newId } from '../../common/random.js'
import { CommonProblems } from '../../common/problem.js'
import type { AuditFilter, AuditOrder, AuditRow, AuditStore, ChainLink } from '../store/audit-store.js'
import { currentAuditContext, systemContext, type AuditActor } from './audit-context.js'
import type { Clock } from './clock.js'

/**
 * The audit trail: one append-only record per change, login and refused attempt, each
 * chained to the one before by a SHA-256 hash, so that an edited, deleted or reordered
 * record breaks the chain at its seq.
 *
 * A record's hash is SHA-256 (lowercase hex) over the UTF-8 bytes of the previous
 * record's hash (hex; GENESIS_HASH for the first) followed directly by the RFC 8785
 * canonical JSON of the record as the API shows it, less its `prev_hash` and `hash`.
 */

/** The previous hash of the very first record. */
export const GENESIS_HASH = '0'.repeat(64)

const DAY_MS = 86_400_000
/** Records read per step when verifying or exporting: the event loop breathes between steps. */
const CHAIN_PAGE = 1000
export const DEFAULT_PAGE_LIMIT = 100
export const MAX_PAGE_LIMIT = 500

export type AuditOutcome = 'success' | 'failure'

export interface AuditTarget { type: string, id: string | null, name?: string | null }

/** What a service records; actor and source default to the running audit context. */
export interface AuditEntry {
  action: string
  outcome?: AuditOutcome
  errorCode?: string | null
  target?: AuditTarget | null
  changes?: { before?: unknown, after?: unknown } | null
  actor?: AuditActor
}

/** A record as the API, the NDJSON export and the CLI show it. */
export interface AuditRecordView {
  seq: number
  id: string
  at: string
  action: string
  outcome: AuditOutcome
  error_code: string | null
  actor: { type: string, id: string | null }
  source: { ip: string | null, user_agent: string | null, request_id: string | null }
  target: { type: string, id: string | null, name: string | null } | null
  changes: { before?: unknown, after?: unknown } | null
  prev_hash: string
  hash: string
}

export interface ChainVerification { valid: boolean, checked: number, first_broken_seq: number | null }

export interface AuditPage { records: AuditRecordView[], next_cursor: string | null }

export interface AuditQuery { filter: AuditFilter, order: AuditOrder, limit: number, cursor?: string }

/**
 * Member names that never enter a record's changes, however a caller builds them: a
 * second line of defence behind each recorder choosing what it writes.
 */
const SECRET_MEMBER = /password|secret|^(key|token|access_token|refresh_token|private_key|private_pkcs8|token_hash|key_hash)$/i

function withoutSecrets (value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutSecrets)
  if (typeof value !== 'object' || value === null) return value
  return Object.fromEntries(Object.entries(value).filter(([name]) => !SECRET_MEMBER.test(name)).map(([name, v]) => [name, withoutSecrets(v)]))
}

/**
 * A record as hashed: throws when its changes are not JSON, which only a row written
 * by hand can hold. Verification then reports the row; the listings show it through
 * `shown`.
 */
function view (row: AuditRow): AuditRecordView {
  return {
    seq: row.seq,
    id: row.id,
    at: new Date(row.at).toISOString(),
    action: row.action,
    outcome: row.outcome,
    error_code: row.errorCode,
    actor: { type: row.actorType, id: row.actorId },
    source: { ip: row.sourceIp, user_agent: row.sourceUserAgent, request_id: row.requestId },
    target: row.targetType === null ? null : { type: row.targetType, id: row.targetId, name: row.targetName },
    changes: row.changes === null ? null : JSON.parse(row.changes) as AuditRecordView['changes'],
    prev_hash: row.prevHash,
    hash: row.hash
  }
}

const isChanges = (value: unknown): value is NonNullable<AuditRecordView['changes']> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

/**
 * A record as the listings and the export show it. A row written by hand whose changes
 * are not a JSON object is shown with no changes rather than failing the whole page
 * (or cutting an export short); its hash does not match, and verification names it.
 */
function shown (row: AuditRow): AuditRecordView {
  let changes: unknown = null
  try {
    changes = row.changes === null ? null : JSON.parse(row.changes)
  } catch {}
  return view({ ...row, changes: isChanges(changes) ? row.changes : null })
}

/** The hash of a record (see the module comment); `record` may carry prev_hash and hash, which are left out. */
export function auditHash (prevHash: string, record: AuditRecordView | Omit<AuditRecordView, 'prev_hash' | 'hash'>): string {
  const { prev_hash: _prev, hash: _hash, ...hashed } = record as AuditRecordView
  return createHash('sha256').update(prevHash + (canonicalize(hashed) as string)).digest('hex')
}

/** Recomputes a stored row's hash; null when its changes are not JSON (an edited row). */
function rehash (row: AuditRow): string | null {
  try {
    return auditHash(row.prevHash, view(row))
  } catch {
    return null
  }
}

const CURSOR_PATTERN = /^(newest|oldest):([1-9][0-9]{0,15})$/

/** An opaque cursor: the order it was given for and the last seq of its page. */
function encodeCursor (order: AuditOrder, seq: number): string {
  return Buffer.from(`${order}:${seq}`).toString('base64url')
}

function decodeCursor (cursor: string, order: AuditOrder): number {
  const match = CURSOR_PATTERN.exec(Buffer.from(cursor, 'base64url').toString())
  if (match === null || match[1] !== order) throw CommonProblems.validationFailed([`querystring/cursor is not a cursor this listing gave for order ${order}`])
  return Number(match[2])
}

export interface AuditOptions {
  store: AuditStore
  clock: Clock
}

export type Audit = ReturnType<typeof createAudit>

export function createAudit (options: AuditOptions) {
  const { store, clock } = options

  function record (entry: AuditEntry): AuditRecordView {
    const context = currentAuditContext()
    const actor = entry.actor ?? context.actor
    const changes = entry.changes === undefined || entry.changes === null
      ? null
      // Through JSON first: what is hashed is exactly what is stored and read back.
      : JSON.stringify(withoutSecrets(JSON.parse(JSON.stringify(entry.changes))))
    const fields = {
      id: newId('aud'),
      at: clock.now(),
      action: entry.action,
      outcome: entry.outcome ?? 'success',
      errorCode: entry.errorCode ?? null,
      actorType: actor.type,
      actorId: actor.id,
      sourceIp: context.source.ip,
      sourceUserAgent: context.source.userAgent,
      requestId: context.source.requestId,
      targetType: entry.target?.type ?? null,
      targetId: entry.target?.id ?? null,
      targetName: entry.target === undefined || entry.target === null ? null : entry.target.name ?? null,
      changes
    }
    const row = store.append((tip) => {
      const seq = (tip?.seq ?? 0) + 1
      const prevHash = tip?.hash ?? GENESIS_HASH
      const unhashed = { ...fields, seq, prevHash, hash: '' }
      return { ...unhashed, hash: auditHash(prevHash, view(unhashed)) }
    })
    return view(row)
  }

  /** Pages of matching records, each page read on its own (a long export holds no transaction). */
  async function * matching (filter: AuditFilter, order: AuditOrder): AsyncGenerator<AuditRecordView> {
    let after: number | null = null
    for (;;) {
      const rows = store.page(filter, order, after, CHAIN_PAGE)
      for (const row of rows) yield shown(row)
      const last = rows.at(-1)
      if (last === undefined || rows.length < CHAIN_PAGE) return
      after = last.seq
      await nextTurn()
    }
  }

  /** The prune record that names `anchor`, if `row` is one. */
  function vouchesFor (row: AuditRow, anchor: ChainLink): boolean {
    if (row.action !== PRUNE_ACTION || row.changes === null) return false
    // Any JSON hashes: a row made by hand with a valid hash may hold null or a number here.
    const after = (JSON.parse(row.changes) as { after?: { through_seq?: unknown, through_hash?: unknown } | null } | null)?.after
    return after?.through_seq === anchor.seq && after.through_hash === anchor.hash
  }

  return {
    record,

    /** One page, newest or oldest first; `next_cursor` continues it (null: nothing more). */
    list (query: AuditQuery): AuditPage {
      const after = query.cursor !== undefined ? decodeCursor(query.cursor, query.order) : null
      const rows = store.page(query.filter, query.order, after, query.limit + 1)
      const page = rows.slice(0, query.limit)
      const last = page.at(-1)
      return { records: page.map(shown), next_cursor: rows.length > query.limit && last !== undefined ? encodeCursor(query.order, last.seq) : null }
    },

    /** Every matching record, in order, read a page at a time. */
    export: matching,

    /** The last record (or the anchor after pruning everything, or seq 0). */
    head (): { seq: number, hash: string, at: string | null } {
      const last = store.tip()
      if (last === null) return { seq: 0, hash: GENESIS_HASH, at: null }
      const row = store.bySeq(last.seq)
      return { seq: last.seq, hash: last.hash, at: row === null ? null : new Date(row.at).toISOString() }
    },

    /** What the trail holds at `seq` now: a record's hash (the anchor's for the last pruned), pruned, or nothing. */
    hashAt (seq: number): { state: 'present', hash: string } | { state: 'pruned' | 'missing' } {
      const row = seq > 0 ? store.bySeq(seq) : null
      if (row !== null) return { state: 'present', hash: row.hash }
      const anchor = store.anchor()
      if (anchor !== null && seq === anchor.seq) return { state: 'present', hash: anchor.hash }
      if (anchor !== null && seq < anchor.seq) return { state: 'pruned' }
      if (seq === 0) return { state: 'present', hash: GENESIS_HASH }
      return { state: 'missing' }
    },

    /**
     * Walks the chain from the anchor (or the start) to the last record. Broken at the
     * first seq that is missing, links to another hash, or hashes differently; an anchor
     * that no `audit.prune` record names breaks it too (rows deleted and the anchor
     * moved by hand).
     */
    async verify (): Promise<ChainVerification> {
      let anchor = store.anchor()
      let previous: ChainLink = anchor ?? { seq: 0, hash: GENESIS_HASH }
      // Records appended while this runs are left for the next verification.
      const through = store.tip()?.seq ?? previous.seq
      let vouched = anchor === null
      let checked = 0
      const broken = (seq: number): ChainVerification => ({ valid: false, checked, first_broken_seq: seq })
      for (;;) {
        const rows = store.chainPage(previous.seq, through, CHAIN_PAGE)
        for (const row of rows) {
          if (row.seq !== previous.seq + 1) {
            // Pruning may have run meanwhile: the chain then goes on from the new anchor.
            const moved = store.anchor()
            if (moved === null || moved.seq + 1 !== row.seq || moved.hash !== row.prevHash || moved.seq < previous.seq) return broken(previous.seq + 1)
            anchor = moved
            vouched = false
            previous = moved
          }
          if (row.prevHash !== previous.hash || rehash(row) !== row.hash) return broken(row.seq)
          if (anchor !== null && !vouched) vouched = vouchesFor(row, anchor)
          checked++
          previous = row
        }
        if (rows.length < CHAIN_PAGE) break
        await nextTurn()
      }
      if (previous.seq < through) return broken(previous.seq + 1)
      if (!vouched && anchor !== null) return broken(anchor.seq + 1)
      return { valid: true, checked, first_broken_seq: null }
    },

    /**
     * Deletes the records older than `retentionDays` (0: keeps all), moves the anchor to
     * the last one deleted and records `audit.prune` naming it, in one transaction.
     */
    prune (retentionDays: number): { through: ChainLink, deleted: number } | null {
      if (retentionDays <= 0) return null
      const now = clock.now()
      return store.pruneBefore(now - retentionDays * DAY_MS, now, (through, deleted) => {
        record({
          action: PRUNE_ACTION,
          actor: RETENTION_ACTOR,
          target: null,
          changes: { after: { through_seq: through.seq, through_hash: through.hash, deleted, retention_days: retentionDays } }
        })
      })
    }
  }
}

export const PRUNE_ACTION = 'audit.prune'
const RETENTION_ACTOR = systemContext('audit-retention').actor
