import { ConfigError } from '../../common/config.js'
import { createSigningKeyCipher, isEncrypted, SigningKeyDecryptionError, type SigningKeyCipher } from './signing-key-cipher.js'

const KEY_VARIABLE = 'IDENTITY_SIGNING_KEY_ENCRYPTION_KEY'
const PREVIOUS_KEY_VARIABLE = 'IDENTITY_SIGNING_KEY_ENCRYPTION_KEY_PREVIOUS'

export interface SigningKeyProtectionOptions {
  /** The secret keys are encrypted with; undefined: new keys are stored unencrypted. */
  encryptionKey: string | undefined
  /** The former secret while it is being changed: what it encrypted is re-encrypted with the new one. */
  previousEncryptionKey: string | undefined
}

/** One stored private key: a PKCS#8 PEM or an encrypted envelope. */
export interface StoredPrivateKey { kid: string, privateKey: string }

/** What the start-up review found and changed, counted for the log (never the keys themselves). */
export interface StorageReview {
  /** Unencrypted keys to encrypt now (an existing database upgraded). */
  encrypted: number
  /** Keys the previous secret encrypted, to encrypt with the new one. */
  reencrypted: number
  /** Keys left unencrypted because no secret is configured. */
  unencrypted: number
  /** kid → the value to store instead. */
  updates: Map<string, string>
}

export type SigningKeyProtection = ReturnType<typeof createSigningKeyProtection>

function opens (cipher: SigningKeyCipher, key: StoredPrivateKey): string | null {
  try {
    return cipher.decrypt(key.kid, key.privateKey)
  } catch (err) {
    if (err instanceof SigningKeyDecryptionError) return null
    throw err
  }
}

/**
 * How signing private keys are kept at rest: encrypted when a secret is configured,
 * as PEM otherwise. Each stored value says which it is, so a database may hold both
 * (one written before the secret was set), and the start-up review settles them.
 */
export function createSigningKeyProtection (options: SigningKeyProtectionOptions) {
  const current = options.encryptionKey !== undefined ? createSigningKeyCipher(options.encryptionKey) : null
  const previous = options.previousEncryptionKey !== undefined ? createSigningKeyCipher(options.previousEncryptionKey) : null

  return {
    /** Whether new keys are stored encrypted. */
    encrypting: current !== null,

    /** The value to store for a new private key. */
    protect (kid: string, pem: string): string {
      return current === null ? pem : current.encrypt(kid, pem)
    },

    /** The PEM of a stored value. */
    reveal (kid: string, stored: string): string {
      if (!isEncrypted(stored)) return stored
      // Reached only when another process (the CLI) wrote with a secret this one lacks: start-up refuses the rest.
      if (current === null) throw new Error(`signing key ${kid} is encrypted at rest and ${KEY_VARIABLE} is not set here; set the same value in every identity process`)
      return current.decrypt(kid, stored)
    },

    /**
     * Checks, at start, that every stored key opens with the configured secret, and
     * says what to rewrite: unencrypted keys get encrypted, keys of the previous secret
     * re-encrypted. Throws a ConfigError naming the variable (never its value) when a
     * key cannot be opened, so identity refuses to start instead of failing to sign.
     */
    review (keys: readonly StoredPrivateKey[]): StorageReview {
      const review: StorageReview = { encrypted: 0, reencrypted: 0, unencrypted: 0, updates: new Map() }
      let locked = 0
      const undecryptable: string[] = []
      for (const key of keys) {
        if (!isEncrypted(key.privateKey)) {
          if (current === null) {
            review.unencrypted++
          } else {
            review.updates.set(key.kid, current.encrypt(key.kid, key.privateKey))
            review.encrypted++
          }
        } else if (current === null) {
          locked++
        } else if (opens(current, key) === null) {
          const pem = previous !== null ? opens(previous, key) : null
          if (pem === null) {
            undecryptable.push(key.kid)
          } else {
            review.updates.set(key.kid, current.encrypt(key.kid, pem))
            review.reencrypted++
          }
        }
      }
      if (locked > 0) {
        throw new ConfigError('identity environment', [
          `${KEY_VARIABLE}: is required: the stored signing private keys are encrypted; set the key they were encrypted with`
        ])
      }
      if (undecryptable.length > 0) {
        const which = previous !== null ? `${KEY_VARIABLE} (nor ${PREVIOUS_KEY_VARIABLE})` : KEY_VARIABLE
        throw new ConfigError('identity environment', [
          `${which}: does not decrypt the stored signing keys (kid ${undecryptable.join(', ')}); set the key they were encrypted with` +
          (previous === null ? `, or, to change keys, that one as ${PREVIOUS_KEY_VARIABLE} and the new one as ${KEY_VARIABLE}` : '')
        ])
      }
      return review
    }
  }
}
