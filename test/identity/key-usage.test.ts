import t from 'tap'
import argon2 from 'argon2'
import Database from 'better-sqlite3'
import { parseApiKey } from '../../common/api-key-format.js'
import { startIdentity } from '../helpers/identity.js'
import { keyHelpers, startWithAdmin } from '../helpers/session-setup.js'

/**
 * Key uses are what gateways report: a report is applied at once, visible to another
 * connection (the CLI), without a disk sync of its own; every other commit keeps
 * synchronous=FULL. A verification records nothing: the gateway reports the request
 * it verified for with the others, so counting it here too would count it twice.
 */

const FULL = 2
/** OWASP's 19 MiB, t=2: what identity used for key secrets before SHA-256. */
const LEGACY_ARGON2 = { type: argon2.argon2id as 2, memoryCost: 19_456, timeCost: 2, parallelism: 1 }

t.test('a reported use is seen at once by another connection, and the connection stays synchronous=FULL', async (t) => {
  const s = await startWithAdmin(t)
  const { apiKeys } = s.identity.services
  const keys = keyHelpers(t, s)
  const created = await apiKeys.create({ name: 'bookkeeping', permissions: ['users:list'], expiresAt: null })
  const other = new Database(s.databasePath, { readonly: true })
  t.teardown(() => other.close())
  const row = (): { use_count: number, last_used_at: number | null } =>
    other.prepare('SELECT use_count, last_used_at FROM api_key_secrets WHERE key_id = ?').get(created.key.id) as { use_count: number, last_used_at: number | null }
  t.equal((await apiKeys.verify(created.secret)).valid, true, 'the key verifies')
  t.same(row(), { use_count: 0, last_used_at: null }, 'the verification wrote nothing')
  t.same(await keys.reportUses([{ key: created.secret, count: 2, at: s.clock.now() }]), { applied: 1, unknown: 0, duplicate: false })
  t.equal(s.identity.db.pragma('synchronous', { simple: true }), FULL, 'other commits still wait for the disk')
  t.same(row(), { use_count: 2, last_used_at: s.clock.now() }, 'the reported uses are visible to another connection, with their time')
})

t.test('a revocation that lands during a legacy argon2 run wins', async (t) => {
  const { identity } = await startIdentity(t)
  const { apiKeys } = identity.services
  const created = await apiKeys.create({ name: 'raced', permissions: ['users:list'], expiresAt: null })
  // A row stored before SHA-256: its check is an argon2 run, during which other requests are served.
  const { secret } = parseApiKey(created.secret) as { secret: string }
  identity.db.prepare('UPDATE api_key_secrets SET secret_hash = ? WHERE key_id = ?')
    .run(await argon2.hash(secret, LEGACY_ARGON2), created.key.id)
  const verifying = apiKeys.verify(created.secret) // suspended in argon2
  await apiKeys.revoke(created.key.id)
  t.same(await verifying, { valid: false, reason: 'revoked' }, 'the verification started before the revocation is refused')
  t.equal(apiKeys.secretsOf(created.key.id)[0]?.useCount, 0, 'and is not counted as a use')
})
