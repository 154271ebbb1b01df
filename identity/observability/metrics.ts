import { Counter, Registry, collectDefaultMetrics } from 'prom-client'
import { tracingDropsCounter } from '../../common/tracing/drops-metric.js'
import { registerBuildInfo } from '../../common/build-info.js'
import type { KeyInvalidReason } from '../../common/internal-api.js'
import type { KeySecretScheme } from '../services/key-secret-scheme.js'

export type Argon2Operation = 'hash' | 'verify'
/** `dummy`: the verification an unknown e-mail costs at login, and the hash it is checked against (made once at start). */
export type Argon2Purpose = 'password' | 'api_key' | 'dummy'
/**
 * `valid`, or why identity refused the key. Finer than the answer: `wrong_secret` (the
 * lookup id exists, the secret does not match) and `throttled` (a legacy argon2id row
 * whose wrong-secret budget is spent, refused without a check) both answer `unknown`;
 * `owner_disabled` (the key's owner is disabled) answers `disabled`.
 */
export type KeyVerificationResult = 'valid' | KeyInvalidReason | 'wrong_secret' | 'throttled' | 'owner_disabled'
/** Of well-formed login requests. `failure`: wrong e-mail or password, or a disabled user; `throttled`: refused before any argon2 run. */
export type LoginOutcome = 'success' | 'failure' | 'throttled'
/**
 * Of refresh requests with a body and a Bearer. `failure`: the Bearer is not this
 * identity's access token, the refresh token is unknown, expired, spent or reused, or
 * the session has ended.
 */
export type RefreshOutcome = 'success' | 'failure'

export interface IdentityMetricsOptions {
  /**
   * prom-client's process and Node.js metrics (CPU, memory, event loop lag, GC); true by
   * default. Each set keeps a GC observer and an event-loop timer for the process's
   * life, so what is never scraped (the CLI) leaves them off.
   */
  processMetrics?: boolean
}

/** A counter whose label values are typed, so that only the bounded sets above can be recorded. */
export interface LabelledCounter<L extends Record<string, string>> {
  inc: (labels: L) => void
}

function labelledCounter<L extends Record<string, string>> (registry: Registry, name: string, help: string,
  labelNames: ReadonlyArray<keyof L & string>): LabelledCounter<L> {
  return new Counter({ name, help, labelNames, registers: [registry] })
}

/**
 * Prometheus metrics (prom-client), one registry per identity instance so that two
 * identities in one process (tests, the one-process demo) never share counters.
 * Labels take the fixed values typed above: never an e-mail, a key id or a path.
 *
 * argon2 runs are what bound identity's CPU (an invalid-key flood, a login storm):
 * watch the rate of `portier_identity_argon2_operations_total` beside
 * `process_cpu_seconds_total`. prom-client's process and Node.js metrics keep their
 * standard names, which stock dashboards and alerts read.
 */
export function createIdentityMetrics (options: IdentityMetricsOptions = {}) {
  const registry = new Registry()
  if (options.processMetrics ?? true) collectDefaultMetrics({ register: registry })
  registerBuildInfo(registry, 'identity')
  return {
    registry,
    argon2Operations: labelledCounter<{ operation: Argon2Operation, purpose: Argon2Purpose }>(registry,
      'portier_identity_argon2_operations_total',
      'argon2id runs by operation (hash, verify) and purpose (password; api_key: key secrets stored before SHA-256, until rewritten; dummy: the unknown-e-mail login verification, and its hash made once at start).',
      ['operation', 'purpose']),
    keyVerifications: labelledCounter<{ result: KeyVerificationResult }>(registry,
      'portier_identity_key_verifications_total',
      'API key verifications by result: valid, or why the key was refused.',
      ['result']),
    keySecretChecks: labelledCounter<{ scheme: KeySecretScheme }>(registry,
      'portier_identity_key_secret_checks_total',
      'API key secret checks by stored scheme: sha256 (microseconds), or argon2id for rows stored before SHA-256 (each also an argon2 run with purpose api_key, until the row is rewritten).',
      ['scheme']),
    keyHashUpgrades: new Counter({
      name: 'portier_identity_key_hash_upgrades_total',
      help: 'Legacy argon2id key secret hashes rewritten as SHA-256 after a successful verification.',
      registers: [registry]
    }),
    logins: labelledCounter<{ outcome: LoginOutcome }>(registry,
      'portier_identity_logins_total',
      'Password logins by outcome (success, failure, throttled).',
      ['outcome']),
    refreshes: labelledCounter<{ outcome: RefreshOutcome }>(registry,
      'portier_identity_refreshes_total',
      'Token refreshes by outcome (success, failure).',
      ['outcome']),
    tracingSpansDropped: tracingDropsCounter(registry, 'identity')
  }
}

export type IdentityMetrics = ReturnType<typeof createIdentityMetrics>
