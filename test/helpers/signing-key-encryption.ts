/**
 * Identity refuses to start without IDENTITY_SIGNING_KEY_ENCRYPTION_KEY (unless
 * encryption is turned off): the one key every test identity, server or CLI, is given,
 * so that a server and a CLI opened on the same file open the same signing keys.
 * Tests that need a database in clear say so with WITHOUT_SIGNING_KEY_ENCRYPTION.
 */
export const TEST_SIGNING_KEY_ENCRYPTION_KEY = 'test-only-signing-key-encryption-key-0123456789abcdef'

/** The environment fragment that gives an identity process the test key. */
export const WITH_SIGNING_KEY_ENCRYPTION: Readonly<Record<string, string>> = Object.freeze({
  IDENTITY_SIGNING_KEY_ENCRYPTION_KEY: TEST_SIGNING_KEY_ENCRYPTION_KEY
})

/** Signing keys stored in clear, said explicitly (an empty variable counts as unset). */
export const WITHOUT_SIGNING_KEY_ENCRYPTION: Readonly<Record<string, string>> = Object.freeze({
  IDENTITY_SIGNING_KEY_ENCRYPTION: 'off',
  IDENTITY_SIGNING_KEY_ENCRYPTION_KEY: ''
})
