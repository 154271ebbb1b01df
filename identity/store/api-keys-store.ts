import type { TrafficPolicy } from '../../common/traffic/policy.js'
import { commitWithoutSync } from './database.js'
import type { Db } from './db.js'
import { createBatchLedger } from './usage-batches.js'
import { keyListWhere, type KeyListFilter } from './key-list-filter.js'

/** Where a key was made: the admin API, the CLI, its owner through /me/keys, or the demo's seeding. */
export const KEY_ORIGINS = ['admin', 'cli', 'self_service', 'seed'] as const
export type KeyOrigin = typeof KEY_ORIGINS[number]

export interface ApiKeyRecord {
  id: string
  name: string
  origin: KeyOrigin
  permissions: string[]
  /** The key's own traffic policies, in the order given. */
  policies: TrafficPolicy[]
  /** The user the key belongs to, whose roles' policies it shares; null for a key of its own. */
  ownerUserId: string | null
  expiresAt: number | null
  createdAt: number
  updatedAt: number
  lastUsedAt: number | null
  /** The route pattern and client address of that last use, as the gateway reported them. */
  lastUsedRoute: string | null
  lastUsedIp: string | null
  disabledAt: number | null
  revokedAt: number | null
}

export interface ApiKeySecretRecord {
  lookupId: string
  keyId: string
  secretHash: string
  /** The last 4 characters of the full key text, shown to tell keys apart; null for secrets made before they were kept. */
  last4: string | null
  createdAt: number
  retiredAt: number | null
  graceUntil: number | null
  lastUsedAt: number | null
  lastUsedRoute: string | null
  lastUsedIp: string | null
  useCount: number
}

/** What a new secret is stored as: never the secret itself. */
export interface NewSecret {
  lookupId: string
  secretHash: string
  last4: string
}

/** Uses of one secret the gateways counted: how many, and the last one. */
export interface KeyUseReport {
  lookupId: string
  count: number
  lastUsedAt: number
  route: string | null
  ip: string | null
}

/** What a key is created with and an update may change (written together). */
export interface KeyFields {
  permissions: string[]
  policies: TrafficPolicy[]
  expiresAt: number | null
}

interface KeyRow {
  id: string
  name: string
  origin: KeyOrigin
  permissions: string
  traffic_policies: string
  owner_user_id: string | null
  expires_at: number | null
  created_at: number
  updated_at: number
  last_used_at: number | null
  last_used_route: string | null
  last_used_ip: string | null
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
  last4: string | null
  created_at: number
  retired_at: number | null
  grace_until: number | null
  last_used_at: number | null
  last_used_route: string | null
  last_used_ip: string | null
  use_count: number
}

function toKey (row: KeyRow | undefined): ApiKeyRecord | null {
  if (row === undefined) return null
  return {
    id: row.id,
    name: row.name,
    origin: row.origin,
    permissions: JSON.parse(row.permissions) as string[],
    policies: JSON.parse(row.traffic_policies) as TrafficPolicy[],
    ownerUserId: row.owner_user_id,
    expiresAt: row.expires_at,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    lastUsedAt: row.last_used_at,
    lastUsedRoute: row.last_used_route,
    lastUsedIp: row.last_used_ip,
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
    last4: row.last4,
    createdAt: row.created_at,
    retiredAt: row.retired_at,
    graceUntil: row.grace_until,
    lastUsedAt: row.last_used_at,
    lastUsedRoute: row.last_used_route,
    lastUsedIp: row.last_used_ip,
    useCount: row.use_count
  }
}

export type ApiKeysStore = ReturnType<typeof createApiKeysStore>

export function createApiKeysStore (db: Db) {
  const statements = {
    insertKey: db.prepare(`INSERT INTO api_keys (id, name, origin, permissions, traffic_policies, owner_user_id, expires_at, created_at, updated_at)
      VALUES (@id, @name, @origin, @permissions, @policies, @ownerUserId, @expiresAt, @now, @now)`),
    insertSecret: db.prepare(`INSERT INTO api_key_secrets (lookup_id, key_id, secret_hash, last4, created_at)
      VALUES (@lookupId, @keyId, @secretHash, @last4, @now)`),
    byId: db.prepare('SELECT * FROM api_keys WHERE id = ?'),
    byName: db.prepare('SELECT * FROM api_keys WHERE name = ?'),
    secretsOf: db.prepare('SELECT * FROM api_key_secrets WHERE key_id = ? ORDER BY created_at DESC'),
    secretByLookup: db.prepare('SELECT * FROM api_key_secrets WHERE lookup_id = ?'),
    update: db.prepare(`UPDATE api_keys SET permissions = @permissions, traffic_policies = @policies, expires_at = @expiresAt, updated_at = @now
      WHERE id = @id`),
    liveOwnedBy: db.prepare('SELECT id FROM api_keys WHERE owner_user_id = ? AND revoked_at IS NULL ORDER BY id').pluck(),
    ownedBy: db.prepare('SELECT * FROM api_keys WHERE owner_user_id = ? ORDER BY created_at, id'),
    // Disabled keys count: their owner can have them enabled again.
    activeCountOf: db.prepare(`SELECT count(*) FROM api_keys
      WHERE owner_user_id = ? AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > ?)`).pluck(),
    setDisabled: db.prepare('UPDATE api_keys SET disabled_at = ?, updated_at = ? WHERE id = ?'),
    setRevoked: db.prepare('UPDATE api_keys SET revoked_at = ?, updated_at = ? WHERE id = ? AND revoked_at IS NULL'),
    retireCurrent: db.prepare('UPDATE api_key_secrets SET retired_at = @now, grace_until = @graceUntil WHERE key_id = @keyId AND retired_at IS NULL'),
    replaceSecretHash: db.prepare('UPDATE api_key_secrets SET secret_hash = @next WHERE lookup_id = @lookupId AND secret_hash = @previous'),
    // SET expressions read the row as it was: the route and address follow the time only when it is the latest.
    addSecretUses: db.prepare(`UPDATE api_key_secrets SET
        use_count = use_count + @count,
        last_used_route = CASE WHEN last_used_at IS NULL OR last_used_at <= @at THEN @route ELSE last_used_route END,
        last_used_ip = CASE WHEN last_used_at IS NULL OR last_used_at <= @at THEN @ip ELSE last_used_ip END,
        last_used_at = max(coalesce(last_used_at, @at), @at)
      WHERE lookup_id = @lookupId RETURNING key_id`),
    touchKey: db.prepare(`UPDATE api_keys SET
        last_used_route = CASE WHEN last_used_at IS NULL OR last_used_at <= @at THEN @route ELSE last_used_route END,
        last_used_ip = CASE WHEN last_used_at IS NULL OR last_used_at <= @at THEN @ip ELSE last_used_ip END,
        last_used_at = max(coalesce(last_used_at, @at), @at)
      WHERE id = @keyId`)
  }
  const batches = createBatchLedger(db, 'key_usage_batches')

  return {
    /** A key without an origin is the admin API's (the column's default). */
    insert (key: KeyFields & { id: string, name: string, origin?: KeyOrigin, ownerUserId: string | null }, secret: NewSecret, now: number): void {
      statements.insertKey.run({ ...key, origin: key.origin ?? 'admin', permissions: JSON.stringify(key.permissions), policies: JSON.stringify(key.policies), now })
      statements.insertSecret.run({ ...secret, keyId: key.id, now })
    },
    byId: (id: string) => toKey(statements.byId.get(id) as KeyRow | undefined),
    byName: (name: string) => toKey(statements.byName.get(name) as KeyRow | undefined),
    /** The keys matching every condition of `filter` at `now` (all of them for none), oldest first (key-list-filter.ts). */
    listMatching (filter: KeyListFilter, now: number): ApiKeyRecord[] {
      const { where, params } = keyListWhere(filter, now)
      return (db.prepare(`SELECT k.* FROM api_keys k WHERE ${where} ORDER BY k.created_at, k.id`).all(params) as KeyRow[])
        .map((row) => toKey(row) as ApiKeyRecord)
    },
    secretsOf: (keyId: string) => (statements.secretsOf.all(keyId) as SecretRow[]).map((row) => toSecret(row) as ApiKeySecretRecord),
    secretByLookupId: (lookupId: string) => toSecret(statements.secretByLookup.get(lookupId) as SecretRow | undefined),
    update: (id: string, fields: KeyFields, now: number) => {
      statements.update.run({ id, permissions: JSON.stringify(fields.permissions), policies: JSON.stringify(fields.policies), expiresAt: fields.expiresAt, now })
    },
    /** The keys of these users that can still be used (or changed): what a change of their roles' policies makes stale. */
    liveOwnedBy: (userIds: readonly string[]) => userIds.flatMap((userId) => statements.liveOwnedBy.all(userId) as string[]),
    /** Every key of a user, revoked and expired ones included, oldest first. */
    ownedBy: (userId: string) => (statements.ownedBy.all(userId) as KeyRow[]).map((row) => toKey(row) as ApiKeyRecord),
    /** The user's keys neither revoked nor expired at `now`: what the self-service key limit counts. */
    activeCountOf: (userId: string, now: number) => statements.activeCountOf.get(userId, now) as number,
    setDisabled: (id: string, disabledAt: number | null, now: number) => { statements.setDisabled.run(disabledAt, now, id) },
    setRevoked: (id: string, now: number) => statements.setRevoked.run(now, now, id).changes > 0,
    /** Retires the current secret (it keeps working until graceUntil) and adds the new one. */
    rotate (keyId: string, secret: NewSecret, graceUntil: number, now: number): void {
      statements.retireCurrent.run({ keyId, graceUntil, now })
      statements.insertSecret.run({ ...secret, keyId, now })
    },
    /** Rewrites a secret's hash (a legacy scheme upgraded); false when the row no longer holds `previous`. */
    replaceSecretHash: (lookupId: string, previous: string, next: string) =>
      statements.replaceSecretHash.run({ lookupId, previous, next }).changes > 0,
    /**
     * Applies a gateway's usage report in one transaction, once per batch id (see
     * usage-batches.ts). Lookup ids no secret has are skipped and counted. Use counts
     * are bookkeeping: committed without a disk sync (see commitWithoutSync).
     * `alongside` runs in the same transaction once the batch is claimed (the report's
     * hourly outcomes), so it too is applied once per batch id, with the uses or not at all.
     */
    recordUses: (batchId: string, uses: readonly KeyUseReport[], now: number, alongside?: () => void) =>
      commitWithoutSync(db, () => {
        if (!batches.claim(batchId, now)) return { applied: 0, unknown: 0, duplicate: true }
        alongside?.()
        let applied = 0
        for (const use of uses) {
          const params = { count: use.count, at: use.lastUsedAt, route: use.route, ip: use.ip }
          const secret = statements.addSecretUses.get({ ...params, lookupId: use.lookupId }) as { key_id: string } | undefined
          if (secret === undefined) continue
          statements.touchKey.run({ at: params.at, route: params.route, ip: params.ip, keyId: secret.key_id })
          applied++
        }
        return { applied, unknown: uses.length - applied, duplicate: false }
      })
  }
}
