import type { Db } from './db.js'

export interface SigningKeyRecord {
  kid: string
  alg: string
  publicJwk: Record<string, unknown>
  /** As stored: a PKCS#8 PEM, or its encrypted envelope (`enc:v1:…`, see services/signing-key-cipher.ts). */
  privateKey: string
  createdAt: number
  retiredAt: number | null
  publishUntil: number | null
}

export interface NewSigningKey { kid: string, alg: string, publicJwk: Record<string, unknown>, privateKey: string, createdAt: number }

interface SigningKeyRow {
  kid: string
  alg: string
  public_jwk: string
  // Named for what it held before encryption at rest; each value says which form it is in.
  private_pkcs8: string
  created_at: number
  retired_at: number | null
  publish_until: number | null
}

function toRecord (row: SigningKeyRow | undefined): SigningKeyRecord | null {
  if (row === undefined) return null
  return {
    kid: row.kid,
    alg: row.alg,
    publicJwk: JSON.parse(row.public_jwk) as Record<string, unknown>,
    privateKey: row.private_pkcs8,
    createdAt: row.created_at,
    retiredAt: row.retired_at,
    publishUntil: row.publish_until
  }
}

const toParams = (key: NewSigningKey): Record<string, unknown> => ({ ...key, publicJwk: JSON.stringify(key.publicJwk) })

export type SigningKeysStore = ReturnType<typeof createSigningKeysStore>

export function createSigningKeysStore (db: Db) {
  const statements = {
    insert: db.prepare(`INSERT INTO signing_keys (kid, alg, public_jwk, private_pkcs8, created_at)
      VALUES (@kid, @alg, @publicJwk, @privateKey, @createdAt)`),
    active: db.prepare('SELECT * FROM signing_keys WHERE retired_at IS NULL'),
    byKid: db.prepare('SELECT * FROM signing_keys WHERE kid = ?'),
    list: db.prepare('SELECT * FROM signing_keys ORDER BY created_at DESC'),
    published: db.prepare('SELECT * FROM signing_keys WHERE retired_at IS NULL OR publish_until > ? ORDER BY created_at DESC'),
    retireActive: db.prepare('UPDATE signing_keys SET retired_at = ?, publish_until = ? WHERE retired_at IS NULL'),
    privateKeys: db.prepare('SELECT kid, private_pkcs8 AS privateKey FROM signing_keys ORDER BY created_at'),
    setPrivateKey: db.prepare('UPDATE signing_keys SET private_pkcs8 = ? WHERE kid = ?')
  }
  return {
    insert: (key: NewSigningKey) => {
      statements.insert.run(toParams(key))
    },
    active: () => toRecord(statements.active.get() as SigningKeyRow | undefined),
    byKid: (kid: string) => toRecord(statements.byKid.get(kid) as SigningKeyRow | undefined),
    list: () => (statements.list.all() as SigningKeyRow[]).map((r) => toRecord(r) as SigningKeyRecord),
    /** The active key and retired keys whose tokens may still be alive. */
    published: (now: number) => (statements.published.all(now) as SigningKeyRow[]).map((r) => toRecord(r) as SigningKeyRecord),
    /** Retires the active key (published until publishUntil) and makes `next` active, atomically. */
    replaceActive: db.transaction((next: NewSigningKey, publishUntil: number) => {
      statements.retireActive.run(next.createdAt, publishUntil)
      statements.insert.run(toParams(next))
    }),
    /**
     * Reads every stored private key and writes back the replacements `rewrite` returns
     * (kid → value), in one IMMEDIATE transaction: a CLI rotating at the same moment
     * waits, and a `rewrite` that throws leaves every row as it was.
     */
    rewritePrivateKeys: <T extends { updates: ReadonlyMap<string, string> }>(rewrite: (keys: Array<{ kid: string, privateKey: string }>) => T): T => {
      // The values replaced are unencrypted keys: zero the space they leave instead of
      // keeping them in the file's free space, then fold the WAL (which still holds the
      // old page) back into the file. The checkpoint is best effort: a reader may hold it.
      const secureDelete = db.pragma('secure_delete', { simple: true }) as number
      db.pragma('secure_delete = ON')
      let result: T
      try {
        result = db.transaction(() => {
          const found = rewrite(statements.privateKeys.all() as Array<{ kid: string, privateKey: string }>)
          for (const [kid, value] of found.updates) statements.setPrivateKey.run(value, kid)
          return found
        }).immediate()
      } finally {
        db.pragma(`secure_delete = ${secureDelete}`)
      }
      if (result.updates.size > 0) db.pragma('wal_checkpoint(TRUNCATE)')
      return result
    }
  }
}
