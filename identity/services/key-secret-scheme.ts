/**
 * How a key secret is stored (see key-secrets.ts): SHA-256, or argon2id for rows written
 * before it. Its own module because the metrics that count checks by scheme must not
 * import the services that check keys back.
 */
export type KeySecretScheme = 'sha256' | 'argon2id'
