import type { UsersStore } from '../store/users-store.js'
import { normalizeEmail } from '../store/users-store.js'
import { IdentityProblems } from '../errors.js'
import type { IdentityMetrics } from '../observability/metrics.js'
import type { LoginThrottle } from './login-throttle.js'
import type { PasswordHasher } from './password-hasher.js'
import type { Sessions, TokenSet } from './sessions.js'
import type { Users } from './users.js'

export interface LoginOptions {
  users: UsersStore
  userAccounts: Users
  hasher: PasswordHasher
  sessions: Sessions
  throttle: LoginThrottle
  metrics: Pick<IdentityMetrics, 'logins'>
}

export interface LoginAttempt {
  email: string
  password: string
  ipAddress: string
  userAgent: string
}

export type Login = ReturnType<typeof createLogin>

/**
 * Password login. An unknown e-mail costs one argon2 verification against a dummy
 * hash and answers exactly like a wrong password, so neither the body nor the time
 * tells which e-mails are registered.
 */
export function createLogin (options: LoginOptions) {
  const { users, userAccounts, hasher, sessions, throttle, metrics } = options

  return async function login (attempt: LoginAttempt): Promise<TokenSet> {
    const email = normalizeEmail(attempt.email)
    // Let through only within the limits, counting the checks still running (see login-throttle.ts).
    const grant = await throttle.attempt(email, attempt.ipAddress)
    if (!grant.allowed) {
      metrics.logins.inc({ outcome: 'throttled' })
      throw IdentityProblems.loginThrottled([grant.retryAfterSeconds], { headers: { 'retry-after': String(grant.retryAfterSeconds) } })
    }
    const { reservation } = grant
    let user: ReturnType<UsersStore['byEmail']>
    let verified: boolean
    try {
      user = users.byEmail(email)
      verified = user === null
        ? (await hasher.verifyAgainstDummy(attempt.password), false)
        : await hasher.verify(user.passwordHash, attempt.password)
    } catch (err) {
      // The check itself failed: the attempt ends (and counts) as a failure, so that it never blocks the ones waiting.
      await reservation.failed()
      throw err
    }
    if (!verified || user === null) {
      // Recorded (in Redis when identity has it) before the 401 is answered.
      await reservation.failed()
      metrics.logins.inc({ outcome: 'failure' })
      throw IdentityProblems.invalidCredentials()
    }
    // Only after the password proved who is asking do we say the account is disabled.
    if (user.disabledAt !== null) {
      await reservation.released()
      metrics.logins.inc({ outcome: 'failure' })
      throw IdentityProblems.userDisabled()
    }
    await reservation.succeeded()
    if (hasher.needsRehash(user.passwordHash)) await userAccounts.rehash(user.id, attempt.password)
    const tokenSet = await sessions.open(user.id, { ipAddress: attempt.ipAddress, userAgent: attempt.userAgent })
    metrics.logins.inc({ outcome: 'success' })
    return tokenSet
  }
}
