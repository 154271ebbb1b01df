import { createHash, timingSafeEqual } from 'node:crypto'
import type { IdentityMetrics } from '../observability/metrics.js'
import type { KeySecretScheme } from './key-secret-scheme.js'
import type { SecretHasher } from './password-hasher.js'

/**
 * How API key secrets are stored: `sha256$<base64url digest>`. A key secret carries
 * 256 random bits, so a fast hash is as strong as a slow one against a stolen database
 * (nobody enumerates 2^256 inputs), while argon2id would let anyone who holds a lookup
 * id make identity burn CPU and memory with each random secret. argon2id stays for
 * passwords, whose entropy is low.
 *
 * Rows written before this scheme hold an argon2id PHC string (`$argon2id$…`): they
 * still verify, and are rewritten as SHA-256 on their next successful verification.
 */
const SHA256_PREFIX = 'sha256$'

export interface KeySecretCheck {
  valid: boolean
  /** For a legacy argon2id row that verified: the SHA-256 value to store instead. */
  upgradedHash: string | null
}

export interface KeySecrets {
  /** The value stored for a new secret. */
  hash: (secret: string) => string
  /** Which scheme a stored value uses; argon2id rows are legacy. */
  schemeOf: (stored: string) => KeySecretScheme
  /** Checks a presented secret against a stored value, in constant time for SHA-256 rows. */
  verify: (stored: string, secret: string) => Promise<KeySecretCheck>
  /** Spends what a SHA-256 check spends, for a lookup id that matched no row. */
  verifyAgainstNothing: (secret: string) => void
}

function sha256 (secret: string): Buffer {
  return createHash('sha256').update(secret, 'utf8').digest()
}

/** The stored value of `secret`: also what seeds and tests write directly. */
export function hashKeySecret (secret: string): string {
  return `${SHA256_PREFIX}${sha256(secret).toString('base64url')}`
}

/**
 * `legacy` verifies argon2id rows (counted as argon2 runs with purpose api_key);
 * every check is counted by scheme.
 */
export function createKeySecrets (legacy: Pick<SecretHasher, 'verify'>, metrics: Pick<IdentityMetrics, 'keySecretChecks'>): KeySecrets {
  const nothing = sha256('')

  return {
    hash: hashKeySecret,
    schemeOf: (stored) => (stored.startsWith(SHA256_PREFIX) ? 'sha256' : 'argon2id'),
    async verify (stored, secret) {
      if (stored.startsWith(SHA256_PREFIX)) {
        metrics.keySecretChecks.inc({ scheme: 'sha256' })
        const expected = Buffer.from(stored.slice(SHA256_PREFIX.length), 'base64url')
        const presented = sha256(secret)
        // A corrupt stored value (wrong length) never authenticates.
        const valid = expected.length === presented.length && timingSafeEqual(expected, presented)
        return { valid, upgradedHash: null }
      }
      metrics.keySecretChecks.inc({ scheme: 'argon2id' })
      const valid = await legacy.verify(stored, secret)
      return { valid, upgradedHash: valid ? hashKeySecret(secret) : null }
    },
    verifyAgainstNothing (secret) {
      timingSafeEqual(nothing, sha256(secret))
    }
  }
}
