import type { Db } from './database.js'

export interface SigningKeyRecord {
  kid: string
  alg: string
  publicJwk: Record<string, unknown>
  privatePkcs8: string
  createdAt: number
  retiredAt: number | null
  publishUntil: number | null
}

interface SigningKeyRow {
  kid: string
  alg: string
  public_jwk: string
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
    privatePkcs8: row.private_pkcs8,
    createdAt: row.created_at,
    retiredAt: row.retired_at,
    publishUntil: row.publish_until
  }
}

export type SigningKeysStore = ReturnType<typeof createSigningKeysStore>

export function createSigningKeysStore (db: Db) {
  const statements = {
    insert: db.prepare(`INSERT INTO signing_keys (kid, alg, public_jwk, private_pkcs8, created_at)
      VALUES (@kid, @alg, @publicJwk, @privatePkcs8, @createdAt)`),
    active: db.prepare('SELECT * FROM signing_keys WHERE retired_at IS NULL'),
    byKid: db.prepare('SELECT * FROM signing_keys WHERE kid = ?'),
    list: db.prepare('SELECT * FROM signing_keys ORDER BY created_at DESC'),
    published: db.prepare('SELECT * FROM signing_keys WHERE retired_at IS NULL OR publish_until > ? ORDER BY created_at DESC'),
    retireActive: db.prepare('UPDATE signing_keys SET retired_at = ?, publish_until = ? WHERE retired_at IS NULL')
  }
  return {
    insert: (key: { kid: string, alg: string, publicJwk: Record<string, unknown>, privatePkcs8: string, createdAt: number }) => {
      statements.insert.run({ ...key, publicJwk: JSON.stringify(key.publicJwk) })
    },
    active: () => toRecord(statements.active.get() as SigningKeyRow | undefined),
    byKid: (kid: string) => toRecord(statements.byKid.get(kid) as SigningKeyRow | undefined),
    list: () => (statements.list.all() as SigningKeyRow[]).map((r) => toRecord(r) as SigningKeyRecord),
    /** The active key and retired keys whose tokens may still be alive. */
    published: (now: number) => (statements.published.all(now) as SigningKeyRow[]).map((r) => toRecord(r) as SigningKeyRecord),
    /** Retires the active key (published until publishUntil) and makes `next` active, atomically. */
    replaceActive: db.transaction((next: { kid: string, alg: string, publicJwk: Record<string, unknown>, privatePkcs8: string, createdAt: number }, publishUntil: number) => {
      statements.retireActive.run(next.createdAt, publishUntil)
      statements.insert.run({ ...next, publicJwk: JSON.stringify(next.publicJwk) })
    })
  }
}
