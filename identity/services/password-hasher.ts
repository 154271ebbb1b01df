import argon2 from 'argon2'
import type { Argon2Params } from '../config.js'
import type { Argon2Operation, Argon2Purpose, IdentityMetrics } from '../observability/metrics.js'

/** argon2id hashing of one kind of secret. */
export interface SecretHasher {
  hash: (plain: string) => Promise<string>
  verify: (hash: string, plain: string) => Promise<boolean>
}

/**
 * Passwords. `verifyAgainstDummy` spends the same work as a real verification so
 * that an unknown e-mail cannot be told apart from a wrong password by timing.
 */
export interface PasswordHasher extends SecretHasher {
  verifyAgainstDummy: (plain: string) => Promise<void>
  needsRehash: (hash: string) => boolean
}

/** One argon2id configuration, seen per purpose so that every run is counted under the right one. */
export interface Argon2Hashers {
  passwords: PasswordHasher
  /** Verifies API key secrets stored before SHA-256 (key-secrets.ts); nothing new is hashed with it. */
  apiKeySecrets: SecretHasher
}

export async function createArgon2Hashers (params: Argon2Params, metrics: Pick<IdentityMetrics, 'argon2Operations'>): Promise<Argon2Hashers> {
  const options = { type: argon2.argon2id as 2, ...params }
  const count = (operation: Argon2Operation, purpose: Argon2Purpose): void => { metrics.argon2Operations.inc({ operation, purpose }) }

  function forPurpose (purpose: Argon2Purpose): SecretHasher {
    return {
      async hash (plain) {
        count('hash', purpose)
        return await argon2.hash(plain, options)
      },
      async verify (stored, plain) {
        count('verify', purpose)
        try {
          return await argon2.verify(stored, plain)
        } catch {
          return false // a corrupt stored hash never authenticates
        }
      }
    }
  }

  const dummy = forPurpose('dummy')
  const dummyHash = await dummy.hash('portier dummy password, never a real one')
  return {
    passwords: {
      ...forPurpose('password'),
      async verifyAgainstDummy (plain) { await dummy.verify(dummyHash, plain) },
      needsRehash: (stored) => argon2.needsRehash(stored, options)
    },
    apiKeySecrets: forPurpose('api_key')
  }
}
