import type { Db } from './db.js'

export interface SessionRecord {
  id: string
  userId: string
  ipAddress: string
  userAgent: string
  createdAt: number
  lastUsedAt: number
  expiresAt: number
  revokedAt: number | null
  revokedReason: string | null
}

export interface RefreshTokenRecord {
  tokenHash: string
  sessionId: string
  createdAt: number
  expiresAt: number
  usedAt: number | null
}

interface SessionRow {
  id: string
  user_id: string
  ip_address: string
  user_agent: string
  created_at: number
  last_used_at: number
  expires_at: number
  revoked_at: number | null
  revoked_reason: string | null
}

interface RefreshRow { token_hash: string, session_id: string, created_at: number, expires_at: number, used_at: number | null }

function toSession (row: SessionRow | undefined): SessionRecord | null {
  if (row === undefined) return null
  return {
    id: row.id,
    userId: row.user_id,
    ipAddress: row.ip_address,
    userAgent: row.user_agent,
    createdAt: row.created_at,
    lastUsedAt: row.last_used_at,
    expiresAt: row.expires_at,
    revokedAt: row.revoked_at,
    revokedReason: row.revoked_reason
  }
}

export type SessionsStore = ReturnType<typeof createSessionsStore>

/** Sessions and the refresh tokens that belong to them. */
export function createSessionsStore (db: Db) {
  const statements = {
    insert: db.prepare(`INSERT INTO sessions (id, user_id, ip_address, user_agent, created_at, last_used_at, expires_at)
      VALUES (@id, @userId, @ipAddress, @userAgent, @createdAt, @createdAt, @expiresAt)`),
    byId: db.prepare('SELECT * FROM sessions WHERE id = ?'),
    byUser: db.prepare('SELECT * FROM sessions WHERE user_id = ? ORDER BY created_at DESC, id LIMIT ?'),
    all: db.prepare('SELECT * FROM sessions ORDER BY created_at DESC, id LIMIT ?'),
    touch: db.prepare('UPDATE sessions SET last_used_at = ? WHERE id = ?'),
    revoke: db.prepare('UPDATE sessions SET revoked_at = ?, revoked_reason = ? WHERE id = ? AND revoked_at IS NULL'),
    liveOfUser: db.prepare('SELECT id FROM sessions WHERE user_id = ? AND revoked_at IS NULL AND expires_at > ?').pluck(),
    revokedSince: db.prepare(`SELECT id, revoked_at, expires_at FROM sessions
      WHERE revoked_at IS NOT NULL AND revoked_at >= ? ORDER BY revoked_at, id LIMIT ?`),
    insertRefresh: db.prepare(`INSERT INTO refresh_tokens (token_hash, session_id, created_at, expires_at)
      VALUES (@tokenHash, @sessionId, @createdAt, @expiresAt)`),
    refreshByHash: db.prepare('SELECT * FROM refresh_tokens WHERE token_hash = ?'),
    markRefreshUsed: db.prepare('UPDATE refresh_tokens SET used_at = ? WHERE token_hash = ? AND used_at IS NULL')
  }

  return {
    insert: (session: { id: string, userId: string, ipAddress: string, userAgent: string, createdAt: number, expiresAt: number }) => {
      statements.insert.run(session)
    },
    byId: (id: string) => toSession(statements.byId.get(id) as SessionRow | undefined),
    /** Newest first; a negative limit means all (SQLite's LIMIT -1). */
    listByUser: (userId: string, limit: number) => (statements.byUser.all(userId, limit) as SessionRow[]).map((r) => toSession(r) as SessionRecord),
    listAll: (limit: number) => (statements.all.all(limit) as SessionRow[]).map((r) => toSession(r) as SessionRecord),
    touch: (id: string, now: number) => { statements.touch.run(now, id) },
    /** True when this call revoked it (false if it already was). */
    revoke: (id: string, reason: string, now: number) => statements.revoke.run(now, reason, id).changes > 0,
    liveIdsOfUser: (userId: string, now: number) => statements.liveOfUser.all(userId, now) as string[],
    revokedSince: (since: number, limit: number) =>
      (statements.revokedSince.all(since, limit) as Array<{ id: string, revoked_at: number, expires_at: number }>)
        .map((r) => ({ id: r.id, revokedAt: r.revoked_at, expiresAt: r.expires_at })),
    insertRefreshToken: (token: { tokenHash: string, sessionId: string, createdAt: number, expiresAt: number }) => {
      statements.insertRefresh.run(token)
    },
    refreshTokenByHash (tokenHash: string): RefreshTokenRecord | null {
      const row = statements.refreshByHash.get(tokenHash) as RefreshRow | undefined
      if (row === undefined) return null
      return { tokenHash: row.token_hash, sessionId: row.session_id, createdAt: row.created_at, expiresAt: row.expires_at, usedAt: row.used_at }
    },
    /** Marks a refresh token used; false if another call already did (the loser of a race). */
    markRefreshTokenUsed: (tokenHash: string, now: number) => statements.markRefreshUsed.run(now, tokenHash).changes === 1
  }
}
