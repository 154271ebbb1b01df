import { calculateJwkThumbprint, exportJWK, exportPKCS8, generateKeyPair, importPKCS8, importJWK, type CryptoKey, type JWK } from 'jose'
import type { SigningKeysStore, SigningKeyRecord } from '../store/signing-keys-store.js'
import type { Clock } from './clock.js'
import type { SigningKeyProtection, StorageReview } from './signing-key-protection.js'
import type { AccessTokenAlgorithm } from '../../common/access-token-profile.js'
import type { EventBus } from '../../common/event-bus.js'

/** How long a retired key stays published beyond the tokens' lifetime: clock skew between hosts. */
const PUBLISH_SKEW_MS = 60_000

export interface SigningKeysOptions {
  store: SigningKeysStore
  clock: Clock
  events: EventBus
  /** Encryption at rest of the private keys (or none). */
  protection: SigningKeyProtection
  alg: AccessTokenAlgorithm
  accessTokenTtlSeconds: number
}

export type SigningKeys = ReturnType<typeof createSigningKeys>

export interface PublicJwk { kty: string, crv?: string, x?: string, y?: string, kid: string, alg: string, use: 'sig' }

function publicView (record: SigningKeyRecord): PublicJwk {
  // Only the public members, whatever else the stored JWK holds.
  const { kty, crv, x, y } = record.publicJwk as JWK
  return {
    kty: kty as string,
    ...(crv !== undefined ? { crv } : {}),
    ...(x !== undefined ? { x } : {}),
    ...(y !== undefined ? { y } : {}),
    kid: record.kid,
    alg: record.alg,
    use: 'sig'
  }
}

/**
 * The signing keyring. The active key is read from the database on every use (a
 * microsecond in-process read) so that a rotation made by the CLI is seen by a
 * running server at once; private keys are decrypted and imported once per kid and
 * cached (a new kid, as after a rotation, is a cache miss), so a signature costs no
 * HKDF or AES-GCM. The cached CryptoKeys are not extractable.
 */
export function createSigningKeys (options: SigningKeysOptions) {
  const { store, clock, events, protection } = options
  const privateKeys = new Map<string, CryptoKey>()
  const publicKeys = new Map<string, CryptoKey>()

  async function generate (): Promise<SigningKeyRecord> {
    const { publicKey, privateKey } = await generateKeyPair(options.alg,
      options.alg === 'EdDSA' ? { crv: 'Ed25519', extractable: true } : { extractable: true })
    const publicJwk = await exportJWK(publicKey)
    const kid = await calculateJwkThumbprint(publicJwk)
    const record = {
      kid,
      alg: options.alg,
      publicJwk,
      privateKey: protection.protect(kid, await exportPKCS8(privateKey)),
      createdAt: clock.now()
    }
    return { ...record, retiredAt: null, publishUntil: null }
  }

  async function privateKeyOf (record: SigningKeyRecord): Promise<CryptoKey> {
    let key = privateKeys.get(record.kid)
    if (key === undefined) {
      key = await importPKCS8(protection.reveal(record.kid, record.privateKey), record.alg)
      privateKeys.set(record.kid, key)
    }
    return key
  }

  return {
    /**
     * At start, before any key is used: every stored private key must open with the
     * configured secret (else a ConfigError), and those stored unencrypted (or with the
     * previous secret) are encrypted with it, all in one transaction. Counts only.
     */
    secureStorage: (): Omit<StorageReview, 'updates'> => {
      const { updates, ...counts } = store.rewritePrivateKeys((keys) => protection.review(keys))
      return counts
    },

    /** Creates the first key when the database has none. */
    async ensureActive (): Promise<SigningKeyRecord> {
      const existing = store.active()
      if (existing !== null) return existing
      const record = await generate()
      try {
        store.insert(record)
      } catch (err) {
        // Another process created one at the same moment (one active key is a unique index).
        const winner = store.active()
        if (winner !== null) return winner
        throw err
      }
      return record
    },

    /** The active key's kid, alg and private key. */
    async active (): Promise<{ kid: string, alg: string, key: CryptoKey }> {
      const record = store.active() ?? await this.ensureActive()
      return { kid: record.kid, alg: record.alg, key: await privateKeyOf(record) }
    },

    /** A key this identity has ever signed with, for verifying its own tokens; null if unknown. */
    async publicKey (kid: string): Promise<{ alg: string, key: CryptoKey } | null> {
      const record = store.byKid(kid)
      if (record === null) return null
      let key = publicKeys.get(kid)
      if (key === undefined) {
        key = await importJWK({ ...record.publicJwk, alg: record.alg }, record.alg) as CryptoKey
        publicKeys.set(kid, key)
      }
      return { alg: record.alg, key }
    },

    /** The JWKS document: the active key and retired keys whose tokens may still be valid. */
    jwks: (): { keys: PublicJwk[] } => ({ keys: store.published(clock.now()).map(publicView) }),

    list: () => store.list(),

    /**
     * A new key signs from now on; the old one stays published until every token it
     * signed has expired.
     */
    async rotate (): Promise<SigningKeyRecord> {
      const record = await generate()
      const now = record.createdAt
      store.replaceActive(record, now + options.accessTokenTtlSeconds * 1000 + PUBLISH_SKEW_MS)
      await events.publish({ type: 'signing_key.rotated', kid: record.kid, at: new Date(now).toISOString() })
      return record
    }
  }
}
