import argon2 from 'argon2'
import type { Argon2Params } from '../config.js'

/**
 * argon2id hashing for passwords and API key secrets. `verifyAgainstDummy` spends
 * the same work as a real verification so that an unknown e-mail cannot be told
 * apart from a wrong password by timing.
 */
export interface PasswordHasher {
  hash: (plain: string) => Promise<string>
  verify: (hash: string, plain: string) => Promise<boolean>
  verifyAgainstDummy: (plain: string) => Promise<void>
  needsRehash: (hash: string) => boolean
}

export async function createPasswordHasher (params: Argon2Params): Promise<PasswordHasher> {
  const options = { type: argon2.argon2id as 2, ...params }
  const hash = async (plain: string): Promise<string> => await argon2.hash(plain, options)
  const verify = async (stored: string, plain: string): Promise<boolean> => {
    try {
      return await argon2.verify(stored, plain)
    } catch {
      return false // a corrupt stored hash never authenticates
    }
  }
  const dummyHash = await hash('portier dummy password, never a real one')
  return {
    hash,
    verify,
    async verifyAgainstDummy (plain) { await verify(dummyHash, plain) },
    needsRehash: (stored) => argon2.needsRehash(stored, options)
  }
}
