/**
 * The words of an API key check, shared by the services that check keys and the
 * metrics that count the checks (which must not import the services back).
 */

/**
 * Why identity refused a key, as answered. Without a verified secret the only answers
 * are `malformed` and `unknown`: a key's state (expired, revoked, disabled, a secret
 * retired by rotation) is told only to whoever proved they hold the secret.
 */
export type KeyInvalidReason = 'malformed' | 'unknown' | 'expired' | 'revoked' | 'disabled' | 'secret_retired'

/** How a key secret is stored (see key-secrets.ts): SHA-256, or argon2id for rows written before it. */
export type KeySecretScheme = 'sha256' | 'argon2id'
