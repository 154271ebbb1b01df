import { commitWithoutSync } from './database.js'
import type { Db } from './db.js'

export interface ApiKeyRecord {
  id: string
  name: string
  permissions: string[]
  expiresAt: number | null
  createdAt: number
  updatedAt: number
  lastUsedAt: number | null
  disabledAt: number | null
  revokedAt: number | null
}

export interface ApiKeySecretRecord {
  lookupId: string
  keyId: string
  secretHash: string
  createdAt: number
  retiredAt: number | null
  graceUntil: number | null
  lastUsedAt: number | null
  useCount: number
}

interface KeyRow {
  id: string
  name: string
  permissions: string
  expires_at: number | null
  created_at: number
  updated_at: number
  last_used_at: number | null
  disabled_at: number | null
  revoked_at: number | null
}

/**
 * `secret_hash` holds `sha256$<base64url>` (identity/services/key-secrets.ts); rows
 * written before that scheme hold an argon2id PHC string until their next successful
 * verification rewrites them.
 */
interface SecretRow {
  lookup_id: string
  key_id: string
  secret_hash: string
  created_at: number
  retired_at: number | null
  grace_until: number | null
  last_used_at: number | null
  use_count: number
}

function toKey (row: KeyRow | undefined): ApiKeyRecord | null {
  if (row === undefined) return null
  return {
    id: row.id,
    name: row.name,
    permissions: JSON.parse(row.permissions) as string[],
    expiresAt: row.expires_at,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    lastUsedAt: row.last_used_at,
    disabledAt: row.disabled_at,
    revokedAt: row.revoked_at
  }
}

function toSecret (row: SecretRow | undefined): ApiKeySecretRecord | null {
  if (row === undefined) return null
  return {
    lookupId: row.lookup_id,
    keyId: row.key_id,
    secretHash: row.secret_hash,
    createdAt: row.created_at,
    retiredAt: row.retired_at,
    graceUntil: row.grace_until,
    lastUsedAt: row.last_used_at,
    useCount: row.use_count
  }
}

export type ApiKeysStore = ReturnType<typeof createApiKeysStore>

export function createApiKeysStore (db: Db) {
  const statements = {
    insertKey: db.prepare(`INSERT INTO api_keys (id, name, permissions, expires_at, created_at, updated_at)
      VALUES (@id, @name, @permissions, @expiresAt, @now, @now)`),
    insertSecret: db.prepare(`INSERT INTO api_key_secrets (lookup_id, key_id, secret_hash, created_at)
      VALUES (@lookupId, @keyId, @secretHash, @now)`),
    byId: db.prepare('SELECT * FROM api_keys WHERE id = ?'),
    byName: db.prepare('SELECT * FROM api_keys WHERE name = ?'),
    list: db.prepare('SELECT * FROM api_keys ORDER BY created_at, id'),
    secretsOf: db.prepare('SELECT * FROM api_key_secrets WHERE key_id = ? ORDER BY created_at DESC'),
    secretByLookup: db.prepare('SELECT * FROM api_key_secrets WHERE lookup_id = ?'),
    update: db.prepare('UPDATE api_keys SET permissions = @permissions, expires_at = @expiresAt, updated_at = @now WHERE id = @id'),
    setDisabled: db.prepare('UPDATE api_keys SET disabled_at = ?, updated_at = ? WHERE id = ?'),
    setRevoked: db.prepare('UPDATE api_keys SET revoked_at = ?, updated_at = ? WHERE id = ? AND revoked_at IS NULL'),
    retireCurrent: db.prepare('UPDATE api_key_secrets SET retired_at = @now, grace_until = @graceUntil WHERE key_id = @keyId AND retired_at IS NULL'),
    replaceSecretHash: db.prepare('UPDATE api_key_secrets SET secret_hash = @next WHERE lookup_id = @lookupId AND secret_hash = @previous'),
    recordSecretUse: db.prepare('UPDATE api_key_secrets SET last_used_at = ?, use_count = use_count + 1 WHERE lookup_id = ?'),
    recordKeyUse: db.prepare('UPDATE api_keys SET last_used_at = ? WHERE id = ?')
  }

  return {
    insert (key: { id: string, name: string, permissions: string[], expiresAt: number | null }, secret: { lookupId: string, secretHash: string }, now: number): void {
      statements.insertKey.run({ ...key, permissions: JSON.stringify(key.permissions), now })
      statements.insertSecret.run({ ...secret, keyId: key.id, now })
    },
    byId: (id: string) => toKey(statements.byId.get(id) as KeyRow | undefined),
    byName: (name: string) => toKey(statements.byName.get(name) as KeyRow | undefined),
    list: () => (statements.list.all() as KeyRow[]).map((row) => toKey(row) as ApiKeyRecord),
    secretsOf: (keyId: string) => (statements.secretsOf.all(keyId) as SecretRow[]).map((row) => toSecret(row) as ApiKeySecretRecord),
    secretByLookupId: (lookupId: string) => toSecret(statements.secretByLookup.get(lookupId) as SecretRow | undefined),
    update: (id: string, permissions: string[], expiresAt: number | null, now: number) => {
      statements.update.run({ id, permissions: JSON.stringify(permissions), expiresAt, now })
    },
    setDisabled: (id: string, disabledAt: number | null, now: number) => { statements.setDisabled.run(disabledAt, now, id) },
    setRevoked: (id: string, now: number) => statements.setRevoked.run(now, now, id).changes > 0,
    /** Retires the current secret (it keeps working until graceUntil) and adds the new one. */
    rotate (keyId: string, secret: { lookupId: string, secretHash: string }, graceUntil: number, now: number): void {
      statements.retireCurrent.run({ keyId, graceUntil, now })
      statements.insertSecret.run({ ...secret, keyId, now })
    },
    /** Rewrites a secret's hash (a legacy scheme upgraded); false when the row no longer holds `previous`. */
    replaceSecretHash: (lookupId: string, previous: string, next: string) =>
      statements.replaceSecretHash.run({ lookupId, previous, next }).changes > 0,
    /** Use counts are bookkeeping: committed without a disk sync (see commitWithoutSync). */
    recordUse: (keyId: string, lookupId: string, now: number) => {
      commitWithoutSync(db, () => {
        statements.recordSecretUse.run(now, lookupId)
        statements.recordKeyUse.run(now, keyId)
      })
    }
  }
}
