import t, { type Test } from 'tap'
import Database from 'better-sqlite3'
import { compactVerify, createLocalJWKSet } from 'jose'
import { auditHash, type AuditRecordView } from '../../identity/services/audit.js'
import { fakeClock, iso, START, startIdentity, tempDir, type FakeClock } from '../helpers/identity.js'
import { adminClient, http } from '../helpers/http.js'
import { assertJson, assertStatus } from '../helpers/assert.js'
import { join } from 'node:path'

/**
 * The audit trail's hash chain as an attacker with the database file meets it: a row
 * edited, deleted or reordered directly in SQLite (the append-only trigger dropped
 * first) breaks verification at that seq; a cut tail, which the chain alone cannot
 * see, fails a head signed before; pruning keeps the chain verifiable from its anchor.
 */

const DAY_MS = 86_400_000

interface Trail {
  adminUrl: string
  publicUrl: string
  databasePath: string
  admin: ReturnType<typeof adminClient>
  clock: FakeClock
  close: () => Promise<void>
}

async function startTrail (t: Test, options: { databasePath?: string, clock?: FakeClock, env?: Record<string, string> } = {}): Promise<Trail> {
  const clock = options.clock ?? fakeClock()
  const identity = await startIdentity(t, options.env ?? {}, { clock, databasePath: options.databasePath ?? join(tempDir(t), 'identity.db') })
  return { ...identity, admin: adminClient(identity.adminUrl, identity.adminToken), clock, close: async () => { await identity.identity.close() } }
}

/** A few records of several kinds: a role, keys created, changed, disabled. */
async function writeRecords (t: Test, trail: Trail, prefix = 'k'): Promise<void> {
  assertStatus(t, await trail.admin('PUT', `/admin/roles/${prefix}-reader`, { permissions: ['tasks:read'] }), 200, 'role set')
  for (let i = 0; i < 3; i++) {
    const created = await trail.admin('POST', '/admin/keys', { name: `${prefix}${i}`, permissions: ['tasks:read'], expires_at: iso(trail.clock.now() + 30 * DAY_MS) })
    assertStatus(t, created, 201, 'key created')
    assertStatus(t, await trail.admin('PATCH', `/admin/keys/${created.body.api_key.id as string}`, { permissions: ['tasks:*'] }), 200, 'key updated')
  }
}

async function verify (trail: Trail) {
  const answer = await trail.admin('GET', '/admin/audit/verify')
  return answer.body as { valid: boolean, checked: number, first_broken_seq: number | null }
}

/** Opens the file as an attacker would, drops the append-only trigger, and runs `change`. */
function tamper (path: string, change: (db: Database.Database) => void): void {
  const db = new Database(path)
  try {
    db.exec('DROP TRIGGER IF EXISTS audit_log_append_only')
    change(db)
  } finally {
    db.close()
  }
}

const seqs = (path: string): number[] => {
  const db = new Database(path, { readonly: true })
  try {
    return db.prepare('SELECT seq FROM audit_log ORDER BY seq').pluck().all() as number[]
  } finally {
    db.close()
  }
}

async function populated (t: Test): Promise<{ trail: Trail, all: number[], first: number, middle: number, last: number }> {
  const trail = await startTrail(t)
  await writeRecords(t, trail)
  const all = seqs(trail.databasePath)
  t.ok(all.length >= 7, 'several records written')
  t.same(await verify(trail), { valid: true, checked: all.length, first_broken_seq: null }, 'the untouched chain verifies')
  return { trail, all, first: all[0] as number, middle: all[Math.floor(all.length / 2)] as number, last: all.at(-1) as number }
}

t.test('the append-only trigger refuses an UPDATE', async (t) => {
  const { trail, middle } = await populated(t)
  const db = new Database(trail.databasePath)
  t.teardown(() => db.close())
  t.throws(() => db.prepare('UPDATE audit_log SET action = ? WHERE seq = ?').run('x', middle), /append-only/)
})

const EDITS: Array<{ row: 'first' | 'middle' | 'last', column: string, value: string | number }> = [
  { row: 'first', column: 'action', value: 'role.remove' },
  { row: 'middle', column: 'changes', value: '{"after":{"permissions":["*"]}}' },
  { row: 'middle', column: 'at', value: 0 },
  { row: 'last', column: 'actor_id', value: 'someone-else' },
  { row: 'last', column: 'outcome', value: 'failure' },
  { row: 'middle', column: 'target_id', value: 'key_other' },
  { row: 'first', column: 'hash', value: 'f'.repeat(64) },
  { row: 'middle', column: 'prev_hash', value: '0'.repeat(64) }
]

for (const edit of EDITS) {
  t.test(`editing ${edit.column} of the ${edit.row} record breaks the chain at its seq`, async (t) => {
    const cut = await populated(t)
    const seq = cut[edit.row]
    tamper(cut.trail.databasePath, (db) => { db.prepare(`UPDATE audit_log SET ${edit.column} = ? WHERE seq = ?`).run(edit.value, seq) })
    t.match(await verify(cut.trail), { valid: false, first_broken_seq: seq })
  })
}

for (const row of ['first', 'middle'] as const) {
  t.test(`deleting the ${row} record breaks the chain at its seq`, async (t) => {
    const cut = await populated(t)
    const seq = cut[row]
    tamper(cut.trail.databasePath, (db) => { db.prepare('DELETE FROM audit_log WHERE seq = ?').run(seq) })
    t.match(await verify(cut.trail), { valid: false, first_broken_seq: seq })
  })
}

t.test('swapping two records (each keeping its hash) breaks the chain at the first of them', async (t) => {
  const { trail, middle } = await populated(t)
  tamper(trail.databasePath, (db) => {
    db.prepare('UPDATE audit_log SET seq = -1 WHERE seq = ?').run(middle)
    db.prepare('UPDATE audit_log SET seq = ? WHERE seq = ?').run(middle, middle + 1)
    db.prepare('UPDATE audit_log SET seq = ? WHERE seq = -1').run(middle + 1)
  })
  t.match(await verify(trail), { valid: false, first_broken_seq: middle })
})

t.test('moving the first record to the end breaks the chain at seq 1', async (t) => {
  const { trail, first, last } = await populated(t)
  tamper(trail.databasePath, (db) => { db.prepare('UPDATE audit_log SET seq = ? WHERE seq = ?').run(last + 1, first) })
  t.match(await verify(trail), { valid: false, first_broken_seq: 1 })
})

t.test('the signed head: verified by the JWKS; a cut tail or a rewritten chain fails it', async (t) => {
  const { trail, last } = await populated(t)
  const signed = await trail.admin('GET', '/admin/audit/head')
  assertJson(t, signed, 200)
  t.match(signed.body, { seq: last, hash: /^[0-9a-f]{64}$/, at: String, signed_at: String, head: String })
  t.equal(signed.headers['cache-control'], 'no-store')

  const jwks = await http(`${trail.publicUrl}/.well-known/jwks.json`)
  const { payload, protectedHeader } = await compactVerify(signed.body.head as string, createLocalJWKSet(jwks.body))
  t.equal(protectedHeader.typ, 'portier-audit-head+jws')
  t.match(JSON.parse(new TextDecoder().decode(payload)), { seq: last, hash: signed.body.hash })

  const check = async (head: string) => (await trail.admin('POST', '/admin/audit/head/verify', { head })).body
  t.match(await check(signed.body.head as string), { valid: true, reason: 'matches', seq: last, chain: { valid: true } })

  // More records later: the old head still matches its seq.
  await writeRecords(t, trail, 'later')
  t.match(await check(signed.body.head as string), { valid: true, reason: 'matches' })

  const forged = `${(signed.body.head as string).slice(0, -4)}AAAA`
  t.match(await check(forged), { valid: false, reason: 'signature_invalid' })

  // Cut the tail back past the signed seq: the chain alone still verifies, the head does not.
  tamper(trail.databasePath, (db) => { db.prepare('DELETE FROM audit_log WHERE seq >= ?').run(last - 1) })
  t.match(await verify(trail), { valid: true }, 'a cut tail leaves a valid chain: only a head kept elsewhere shows it')
  t.match(await check(signed.body.head as string), { valid: false, reason: 'record_missing', seq: last })
})

t.test('a chain rewritten from a record on, hashes recomputed, verifies but fails an older head', async (t) => {
  const { trail, middle } = await populated(t)
  const head = (await trail.admin('GET', '/admin/audit/head')).body.head as string
  const records = (await trail.admin('GET', '/admin/audit?order=oldest&limit=500')).body.records as AuditRecordView[]
  tamper(trail.databasePath, (db) => {
    let prevHash = records.find((r) => r.seq === middle - 1)?.hash as string
    for (const record of records.filter((r) => r.seq >= middle)) {
      const rewritten = { ...record, actor: record.seq === middle ? { type: 'cli', id: 'nobody' } : record.actor, prev_hash: prevHash }
      const hash = auditHash(prevHash, rewritten)
      db.prepare('UPDATE audit_log SET actor_type = ?, actor_id = ?, prev_hash = ?, hash = ? WHERE seq = ?')
        .run(rewritten.actor.type, rewritten.actor.id, prevHash, hash, record.seq)
      prevHash = hash
    }
  })
  t.match(await verify(trail), { valid: true }, 'whoever can recompute hashes can rewrite the chain…')
  t.match((await trail.admin('POST', '/admin/audit/head/verify', { head })).body, { valid: false, reason: 'hash_differs' }, '…but not a head kept elsewhere')
})

t.test('pruning: at start, older records go, the anchor moves, audit.prune names it, the chain verifies', async (t) => {
  const clock = fakeClock()
  const databasePath = join(tempDir(t), 'identity.db')
  const env = { IDENTITY_AUDIT_RETENTION_DAYS: '30' }
  const before = await startTrail(t, { clock, databasePath, env })
  await writeRecords(t, before, 'old')
  const oldSeqs = seqs(databasePath)
  const oldLast = oldSeqs.at(-1) as number
  const oldHash = (await before.admin('GET', '/admin/audit/head')).body.hash as string
  const oldHead = (await before.admin('GET', '/admin/audit/head')).body.head as string
  await before.close()

  clock.advance(31 * DAY_MS)
  const trail = await startTrail(t, { clock, databasePath, env })
  await writeRecords(t, trail, 'new')
  t.same(await verify(trail), { valid: true, checked: seqs(databasePath).length, first_broken_seq: null }, 'verifies from the anchor')
  t.equal(seqs(databasePath)[0], oldLast + 1, 'every record older than 30 days is gone')
  const pruned = (await trail.admin('GET', '/admin/audit?action=audit.prune')).body.records as AuditRecordView[]
  t.equal(pruned.length, 1)
  t.match(pruned[0], {
    seq: oldLast + 1,
    actor: { type: 'system', id: 'audit-retention' },
    changes: { after: { through_seq: oldLast, through_hash: oldHash, deleted: oldSeqs.length, retention_days: 30 } }
  })
  t.match((await trail.admin('POST', '/admin/audit/head/verify', { head: oldHead })).body, { valid: true, reason: 'matches' },
    'a head at the last pruned record still checks against the anchor')

  tamper(databasePath, (db) => { db.prepare('DELETE FROM audit_log WHERE seq = ?').run(oldLast + 1) })
  t.match(await verify(trail), { valid: false, first_broken_seq: oldLast + 1 }, 'deleting beyond the anchor breaks the chain')
})

t.test('pruning by hand (rows deleted, anchor moved, no audit.prune record) breaks the chain', async (t) => {
  const { trail, middle } = await populated(t)
  tamper(trail.databasePath, (db) => {
    const hash = db.prepare('SELECT hash FROM audit_log WHERE seq = ?').pluck().get(middle) as string
    db.prepare('DELETE FROM audit_log WHERE seq <= ?').run(middle)
    db.prepare('INSERT INTO audit_anchor (id, seq, hash, pruned_at) VALUES (1, ?, ?, ?)').run(middle, hash, START)
  })
  t.match(await verify(trail), { valid: false, first_broken_seq: middle + 1 })
})

t.test('a retention of 0 keeps every record', async (t) => {
  const clock = fakeClock()
  const databasePath = join(tempDir(t), 'identity.db')
  const first = await startTrail(t, { clock, databasePath, env: { IDENTITY_AUDIT_RETENTION_DAYS: '0' } })
  await writeRecords(t, first)
  const kept = seqs(databasePath)
  await first.close()
  clock.advance(5000 * DAY_MS)
  const again = await startTrail(t, { clock, databasePath, env: { IDENTITY_AUDIT_RETENTION_DAYS: '0' } })
  t.same(seqs(databasePath), kept)
  t.match(await verify(again), { valid: true, checked: kept.length })
})

t.test('a row whose changes are not a JSON object: the listing and the export still answer, verification names the row', async (t) => {
  const { trail, middle, last, all } = await populated(t)
  tamper(trail.databasePath, (db) => {
    const edit = db.prepare('UPDATE audit_log SET changes = ? WHERE seq = ?')
    edit.run('{"after": not json', middle)
    edit.run('42', last)
  })
  const page = await trail.admin('GET', '/admin/audit?limit=500')
  assertJson(t, page, 200, 'the page is answered')
  t.equal(page.body.records.length, all.length, 'with every record')
  t.same(page.body.records.filter((r: AuditRecordView) => r.seq === middle || r.seq === last).map((r: AuditRecordView) => r.changes), [null, null],
    'the unreadable changes shown as none')
  const exported = await trail.admin('GET', '/admin/audit?format=ndjson')
  assertStatus(t, exported, 200)
  t.equal(exported.text.trimEnd().split('\n').length, all.length, 'the export is not cut short')
  t.match(await verify(trail), { valid: false, first_broken_seq: middle }, 'verification names the first edited row')
})

t.test('a prune record made by hand with a valid hash but changes of null: verification answers, broken', async (t) => {
  const { trail, middle, last } = await populated(t)
  tamper(trail.databasePath, (db) => {
    const rows = db.prepare('SELECT * FROM audit_log WHERE seq > ? ORDER BY seq').all(middle) as Array<Record<string, any>>
    const anchor = db.prepare('SELECT hash FROM audit_log WHERE seq = ?').pluck().get(middle) as string
    db.prepare('DELETE FROM audit_log WHERE seq <= ?').run(last)
    db.prepare('INSERT INTO audit_anchor (id, seq, hash, pruned_at) VALUES (1, ?, ?, ?)').run(middle, anchor, START)
    // Rewritten from the anchor on, hashes recomputed, the first row a prune record whose changes are JSON null.
    let prev = anchor
    for (const [i, row] of rows.entries()) {
      const record = {
        seq: row.seq,
        id: row.id,
        at: new Date(row.at as number).toISOString(),
        action: i === 0 ? 'audit.prune' : row.action,
        outcome: row.outcome,
        error_code: row.error_code,
        actor: { type: row.actor_type, id: row.actor_id },
        source: { ip: row.source_ip, user_agent: row.source_user_agent, request_id: row.request_id },
        target: row.target_type === null ? null : { type: row.target_type, id: row.target_id, name: row.target_name },
        changes: i === 0 ? null : row.changes === null ? null : JSON.parse(row.changes as string)
      }
      const hash = auditHash(prev, record as AuditRecordView)
      db.prepare(`INSERT INTO audit_log (seq, id, at, action, outcome, error_code, actor_type, actor_id, source_ip, source_user_agent, request_id,
        target_type, target_id, target_name, changes, prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
        .run(row.seq, row.id, row.at, record.action, row.outcome, row.error_code, row.actor_type, row.actor_id, row.source_ip, row.source_user_agent,
          row.request_id, row.target_type, row.target_id, row.target_name, i === 0 ? 'null' : row.changes, prev, hash)
      prev = hash
    }
  })
  const answer = await trail.admin('GET', '/admin/audit/verify')
  assertJson(t, answer, 200, 'answered, not 500')
  t.match(answer.body, { valid: false, first_broken_seq: middle + 1 }, 'no audit.prune record names the anchor')
})
