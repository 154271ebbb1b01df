import type { Db } from './db.js'

/**
 * Schema migrations, applied in order and recorded in `schema_migrations`. Append new
 * ones; never edit an applied one. Times are integer milliseconds since the epoch.
 */
const MIGRATIONS: ReadonlyArray<{ version: number, name: string, sql: string }> = [
  {
    version: 1,
    name: 'initial schema',
    sql: `
      CREATE TABLE roles (
        name        TEXT PRIMARY KEY,
        permissions TEXT NOT NULL,            -- JSON array of permission strings
        created_at  INTEGER NOT NULL,
        updated_at  INTEGER NOT NULL
      ) STRICT;

      CREATE TABLE users (
        id                  TEXT PRIMARY KEY,
        email               TEXT NOT NULL,
        email_normalized    TEXT NOT NULL UNIQUE,
        password_hash       TEXT NOT NULL,    -- argon2id PHC string
        created_at          INTEGER NOT NULL,
        updated_at          INTEGER NOT NULL,
        password_changed_at INTEGER NOT NULL,
        disabled_at         INTEGER
      ) STRICT;

      CREATE TABLE user_roles (
        user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        role    TEXT NOT NULL REFERENCES roles(name),
        PRIMARY KEY (user_id, role)
      ) STRICT;
      CREATE INDEX user_roles_by_role ON user_roles(role);

      CREATE TABLE sessions (
        id             TEXT PRIMARY KEY,
        user_id        TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        ip_address     TEXT NOT NULL,
        user_agent     TEXT NOT NULL,
        created_at     INTEGER NOT NULL,
        last_used_at   INTEGER NOT NULL,
        expires_at     INTEGER NOT NULL,      -- absolute lifetime
        revoked_at     INTEGER,
        revoked_reason TEXT
      ) STRICT;
      CREATE INDEX sessions_by_user ON sessions(user_id);
      CREATE INDEX sessions_by_revoked_at ON sessions(revoked_at) WHERE revoked_at IS NOT NULL;

      CREATE TABLE refresh_tokens (
        token_hash  TEXT PRIMARY KEY,         -- SHA-256 of the token; the token is never stored
        session_id  TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        created_at  INTEGER NOT NULL,
        expires_at  INTEGER NOT NULL,         -- idle lifetime
        used_at     INTEGER                   -- set when rotated; a second use is reuse
      ) STRICT;
      CREATE INDEX refresh_tokens_by_session ON refresh_tokens(session_id);

      CREATE TABLE api_keys (
        id           TEXT PRIMARY KEY,
        name         TEXT NOT NULL UNIQUE,
        permissions  TEXT NOT NULL,           -- JSON array
        expires_at   INTEGER,
        created_at   INTEGER NOT NULL,
        updated_at   INTEGER NOT NULL,
        last_used_at INTEGER,
        disabled_at  INTEGER,
        revoked_at   INTEGER
      ) STRICT;

      -- One row per secret a key has had; the lookup id is the non-secret part of the key text.
      CREATE TABLE api_key_secrets (
        lookup_id    TEXT PRIMARY KEY,
        key_id       TEXT NOT NULL REFERENCES api_keys(id) ON DELETE CASCADE,
        secret_hash  TEXT NOT NULL,           -- argon2id PHC string
        created_at   INTEGER NOT NULL,
        retired_at   INTEGER,                 -- set when a rotation replaced this secret
        grace_until  INTEGER,                 -- the retired secret works until then
        last_used_at INTEGER,
        use_count    INTEGER NOT NULL DEFAULT 0
      ) STRICT;
      CREATE INDEX api_key_secrets_by_key ON api_key_secrets(key_id);

      CREATE TABLE signing_keys (
        kid          TEXT PRIMARY KEY,
        alg          TEXT NOT NULL,
        public_jwk   TEXT NOT NULL,
        private_pkcs8 TEXT NOT NULL,
        created_at   INTEGER NOT NULL,
        retired_at   INTEGER,                 -- stopped signing
        publish_until INTEGER                 -- stays in the JWKS until its last token expired
      ) STRICT;
      CREATE UNIQUE INDEX signing_keys_one_active ON signing_keys((1)) WHERE retired_at IS NULL;
    `
  },
  {
    version: 2,
    name: 'event outbox',
    // Invalidation events written by other processes on this file (the CLI), for the
    // identity server to publish on its own bus. AUTOINCREMENT: an id is never reused,
    // so a writer waiting for its rows to be relayed cannot mistake a newer row for its own.
    sql: `
      CREATE TABLE event_outbox (
        id         INTEGER PRIMARY KEY AUTOINCREMENT,
        event      TEXT NOT NULL,             -- the event as published on the bus (JSON)
        created_at INTEGER NOT NULL
      ) STRICT;
      CREATE INDEX event_outbox_by_created_at ON event_outbox(created_at);
    `
  },
  {
    version: 3,
    name: 'key usage reported by the gateways',
    // The route pattern and client address of a key's (and each secret's) last use, and
    // the usage reports already applied: a gateway sends a report again, under the same
    // id, when it did not hear the answer, and it must not count twice.
    sql: `
      ALTER TABLE api_keys ADD COLUMN last_used_route TEXT;
      ALTER TABLE api_keys ADD COLUMN last_used_ip TEXT;
      ALTER TABLE api_key_secrets ADD COLUMN last_used_route TEXT;
      ALTER TABLE api_key_secrets ADD COLUMN last_used_ip TEXT;

      CREATE TABLE key_usage_batches (
        id         TEXT PRIMARY KEY,          -- chosen by the gateway
        applied_at INTEGER NOT NULL
      ) STRICT;
      CREATE INDEX key_usage_batches_by_applied_at ON key_usage_batches(applied_at);
    `
  },
  {
    version: 4,
    name: 'traffic policies, key owners and quota counts',
    // Keys and roles carry traffic policies (common/traffic/policy.ts) for the gateway
    // to enforce; a key may belong to a user, whose roles' policies it then shares.
    // Identity keeps the authoritative count of every quota the gateways report, per
    // counter and period, and the quota reports already applied (as for key usage).
    sql: `
      ALTER TABLE api_keys ADD COLUMN traffic_policies TEXT NOT NULL DEFAULT '[]';  -- JSON array of TrafficPolicy
      ALTER TABLE api_keys ADD COLUMN owner_user_id TEXT REFERENCES users(id) ON DELETE SET NULL;
      CREATE INDEX api_keys_by_owner ON api_keys(owner_user_id);
      ALTER TABLE roles ADD COLUMN traffic_policies TEXT NOT NULL DEFAULT '[]';     -- JSON array of TrafficPolicy

      CREATE TABLE quota_usage (
        counter      TEXT NOT NULL,           -- chosen by the gateway: <scope>|<policy>|<partition>
        period_start INTEGER NOT NULL,        -- 0 for a quota that never refills
        used         INTEGER NOT NULL,
        updated_at   INTEGER NOT NULL,
        PRIMARY KEY (counter, period_start)
      ) STRICT;
      -- Finds the counts of periods long over, to forget them (never those of quotas that never refill).
      CREATE INDEX quota_usage_by_updated_at ON quota_usage(updated_at) WHERE period_start > 0;

      CREATE TABLE quota_usage_batches (
        id         TEXT PRIMARY KEY,          -- chosen by the gateway
        applied_at INTEGER NOT NULL
      ) STRICT;
      CREATE INDEX quota_usage_batches_by_applied_at ON quota_usage_batches(applied_at);
    `
  },
  {
    version: 5,
    name: 'back office: audit trail, hourly key usage, key origin, self-service lifetimes',
    // The audit trail is a hash chain (identity/services/audit.ts): each record's hash covers
    // the previous one's, so an edited, deleted or reordered row breaks it at that seq.
    // Pruning moves the anchor (the last pruned record's seq and hash), from which the
    // remaining chain verifies. Records are never updated: a trigger refuses it.
    // Key usage is kept per key and hour, by outcome, as the gateways report it.
    sql: `
      CREATE TABLE audit_log (
        seq               INTEGER PRIMARY KEY,  -- 1, 2, 3… in the order written; never reused
        id                TEXT NOT NULL UNIQUE,
        at                INTEGER NOT NULL,
        action            TEXT NOT NULL,        -- e.g. key.create, user.disable, login
        outcome           TEXT NOT NULL,        -- success | failure
        error_code        TEXT,                 -- the problem code of a failure
        actor_type        TEXT NOT NULL,        -- user | admin_token | cli | system | anonymous
        actor_id          TEXT,
        source_ip         TEXT,
        source_user_agent TEXT,
        request_id        TEXT,
        target_type       TEXT,
        target_id         TEXT,
        target_name       TEXT,
        changes           TEXT,                 -- JSON {before, after}; never a secret, a hash of one, or a password
        prev_hash         TEXT NOT NULL,
        hash              TEXT NOT NULL         -- SHA-256 hex over prev_hash and the record's canonical JSON (RFC 8785)
      ) STRICT;
      CREATE INDEX audit_log_by_at ON audit_log(at);
      CREATE INDEX audit_log_by_actor ON audit_log(actor_type, actor_id);
      CREATE INDEX audit_log_by_target ON audit_log(target_type, target_id);
      CREATE INDEX audit_log_by_action ON audit_log(action);
      CREATE TRIGGER audit_log_append_only BEFORE UPDATE ON audit_log
        BEGIN SELECT RAISE(ABORT, 'audit records are append-only'); END;

      CREATE TABLE audit_anchor (
        id        INTEGER PRIMARY KEY CHECK (id = 1),
        seq       INTEGER NOT NULL,             -- the last pruned record
        hash      TEXT NOT NULL,
        pruned_at INTEGER NOT NULL
      ) STRICT;

      CREATE TABLE key_usage_hourly (
        key_id          TEXT NOT NULL REFERENCES api_keys(id) ON DELETE CASCADE,
        hour_start      INTEGER NOT NULL,       -- ms since the epoch, a whole UTC hour
        allowed         INTEGER NOT NULL DEFAULT 0,
        forbidden       INTEGER NOT NULL DEFAULT 0,
        rate_limited    INTEGER NOT NULL DEFAULT 0,
        quota_exhausted INTEGER NOT NULL DEFAULT 0,
        upstream_error  INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (key_id, hour_start)
      ) STRICT, WITHOUT ROWID;
      CREATE INDEX key_usage_hourly_by_hour ON key_usage_hourly(hour_start);

      -- admin (admin API), cli, self_service (the key's owner through /me/keys), seed.
      ALTER TABLE api_keys ADD COLUMN origin TEXT NOT NULL DEFAULT 'admin';
      -- The longest lifetime a holder of the role may give a self-service key; null: the default.
      ALTER TABLE roles ADD COLUMN key_max_lifetime_days INTEGER;
    `
  },
  {
    version: 6,
    name: 'last 4 characters of each key secret',
    // People tell their keys apart by the prefix and the last 4 characters (as Stripe and
    // GitHub show them), but only the lookup id and a hash were kept, so the end of a key
    // could not be shown. 4 characters of a 256-bit secret are not a secret: they narrow
    // nothing a guesser could use, which is why those services show them too.
    // Nullable: secrets made before this migration have none to show.
    sql: `
      ALTER TABLE api_key_secrets ADD COLUMN last4 TEXT;
    `
  }
]

export const LATEST_SCHEMA_VERSION = MIGRATIONS.at(-1)?.version ?? 0

export function migrate (db: Db): void {
  db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
    version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL) STRICT`)
  const applied = new Set(db.prepare('SELECT version FROM schema_migrations').pluck().all() as number[])
  const record = db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)')
  for (const migration of MIGRATIONS) {
    if (applied.has(migration.version)) continue
    // IMMEDIATE: a second process starting at the same time waits instead of applying twice.
    db.transaction(() => {
      const again = db.prepare('SELECT 1 FROM schema_migrations WHERE version = ?').get(migration.version)
      if (again !== undefined) return
      db.exec(migration.sql)
      record.run(migration.version, migration.name, Date.now())
    }).immediate()
  }
}
