import { createCipheriv, createDecipheriv, createSecretKey, hkdfSync, randomBytes, type KeyObject } from 'node:crypto'

/**
 * Encryption at rest of one signing private key (its PKCS#8 PEM text).
 *
 * Envelope: `enc:v1:<nonce>:<ciphertext‖tag>`, both base64url without padding.
 * - key: HKDF-SHA-256 (RFC 5869) of the secret's UTF-8 bytes, with the fixed salt and
 *   info below, 32 bytes; the same secret always gives the same key, so any process
 *   given the secret (server, CLI) can open what another wrote.
 * - cipher: AES-256-GCM, a random 96-bit nonce per encryption, 128-bit tag.
 * - additional authenticated data: the row's kid (UTF-8). The kid is the public key's
 *   JWK thumbprint, so a ciphertext moved to another row fails to open.
 * A PEM starts with `-----BEGIN`, so a stored value is never ambiguous.
 */
export const ENVELOPE_PREFIX = 'enc:v1:'
const HKDF_DIGEST = 'sha256'
const HKDF_SALT = 'portier/identity/signing-key-encryption'
const HKDF_INFO = 'enc:v1 aes-256-gcm'
const KEY_BYTES = 32
const NONCE_BYTES = 12
const TAG_BYTES = 16
const ALGORITHM = 'aes-256-gcm'
const BASE64URL = /^[A-Za-z0-9_-]+$/

/** A stored value that is an envelope rather than a plaintext PEM. */
export function isEncrypted (stored: string): boolean {
  return stored.startsWith(ENVELOPE_PREFIX)
}

/** The envelope is malformed, or was sealed with another secret or for another kid. Carries no detail on purpose. */
export class SigningKeyDecryptionError extends Error {
  constructor (kid: string) {
    super(`the private key of signing key ${kid} does not decrypt`)
    this.name = 'SigningKeyDecryptionError'
  }
}

export interface SigningKeyCipher {
  encrypt: (kid: string, pem: string) => string
  /** Throws SigningKeyDecryptionError when the envelope does not open. */
  decrypt: (kid: string, envelope: string) => string
}

/** A cipher for one secret. The derived key stays in a KeyObject, which never prints its bytes. */
export function createSigningKeyCipher (secret: string): SigningKeyCipher {
  const key: KeyObject = createSecretKey(Buffer.from(hkdfSync(HKDF_DIGEST, secret, HKDF_SALT, HKDF_INFO, KEY_BYTES)))
  return {
    encrypt (kid, pem) {
      const nonce = randomBytes(NONCE_BYTES)
      const cipher = createCipheriv(ALGORITHM, key, nonce, { authTagLength: TAG_BYTES })
      cipher.setAAD(Buffer.from(kid, 'utf8'))
      const sealed = Buffer.concat([cipher.update(pem, 'utf8'), cipher.final(), cipher.getAuthTag()])
      return `${ENVELOPE_PREFIX}${nonce.toString('base64url')}:${sealed.toString('base64url')}`
    },
    decrypt (kid, envelope) {
      const parts = isEncrypted(envelope) ? envelope.slice(ENVELOPE_PREFIX.length).split(':') : []
      const [nonceText, sealedText] = parts
      if (parts.length !== 2 || nonceText === undefined || sealedText === undefined ||
        !BASE64URL.test(nonceText) || !BASE64URL.test(sealedText)) throw new SigningKeyDecryptionError(kid)
      const nonce = Buffer.from(nonceText, 'base64url')
      const sealed = Buffer.from(sealedText, 'base64url')
      if (nonce.length !== NONCE_BYTES || sealed.length <= TAG_BYTES) throw new SigningKeyDecryptionError(kid)
      try {
        const decipher = createDecipheriv(ALGORITHM, key, nonce, { authTagLength: TAG_BYTES })
        decipher.setAAD(Buffer.from(kid, 'utf8'))
        decipher.setAuthTag(sealed.subarray(sealed.length - TAG_BYTES))
        return Buffer.concat([decipher.update(sealed.subarray(0, sealed.length - TAG_BYTES)), decipher.final()]).toString('utf8')
      } catch {
        // Node's "Unsupported state or unable to authenticate data" says nothing more useful.
        throw new SigningKeyDecryptionError(kid)
      }
    }
  }
}
