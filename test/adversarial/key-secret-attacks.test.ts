import t from 'tap'
import argon2 from 'argon2'
import Database from 'better-sqlite3'
import { formatApiKey, generateApiKey, parseApiKey } from '../../common/api-key-format.js'
import { randomBase62 } from '../../common/random.js'
import { assertProblem } from '../helpers/assert.js'
import type { HttpAnswer } from '../helpers/http.js'
import { http } from '../helpers/http.js'
import { watchForLeaks } from '../helpers/leak-watch.js'
import { startProcessStack, type ProcessStack } from '../helpers/process-stack.js'

/**
 * API key secrets against someone who knows a key's lookup id (it is not secret: lists
 * show it, logs and screenshots carry it), through real gateway and identity processes:
 *
 * - random secrets with that lookup id (valid checksums) cost identity a SHA-256 each,
 *   never an argon2 run, and the holder's key keeps working at once;
 * - without the secret, a revoked, disabled, expired or rotated-out key answers exactly
 *   like a key that never existed (status, body, challenge); its holder still learns why;
 * - a row stored as argon2id by an earlier version is rewritten as SHA-256 by its first
 *   successful use, and wrong secrets run argon2 on it at most 5 times per lookup id.
 */

/** OWASP's 19 MiB, t=2: what identity used for key secrets before SHA-256. */
const LEGACY_ARGON2 = { type: argon2.argon2id as 2, memoryCost: 19_456, timeCost: 2, parallelism: 1 }
const LEGACY_BUDGET = 5

/** identity's counters that matter here, from one scrape. */
async function counters (stack: ProcessStack): Promise<{ argon2: number, sha256: number, argon2Checks: number, upgrades: number }> {
  const text = (await stack.identity.admin('GET', '/metrics')).text
  const value = (pattern: RegExp): number => Number(pattern.exec(text)?.[1] ?? 0)
  return {
    argon2: value(/^portier_identity_argon2_operations_total\{operation="verify",purpose="api_key"\} (\d+)$/m),
    sha256: value(/^portier_identity_key_secret_checks_total\{scheme="sha256"\} (\d+)$/m),
    argon2Checks: value(/^portier_identity_key_secret_checks_total\{scheme="argon2id"\} (\d+)$/m),
    upgrades: value(/^portier_identity_key_hash_upgrades_total (\d+)$/m)
  }
}

const withLookupIdOf = (key: string): string => formatApiKey((parseApiKey(key) as { lookupId: string }).lookupId, randomBase62(43))

/** What a client can compare between two refusals: everything but the request id. */
function refusal (answer: HttpAnswer): { status: number, body: string, challenge: string | undefined, contentType: string | undefined } {
  return { status: answer.status, body: answer.text, challenge: answer.headers['www-authenticate'], contentType: answer.headers['content-type'] }
}

t.test('key secrets against a known lookup id, through the gateway', async (t) => {
  const leaks = watchForLeaks()
  const stack = await startProcessStack(t, { leaks })
  const users = async (key: string): Promise<HttpAnswer> => await stack.call('/users?per_page=1', { headers: { 'x-api-key': key } })
  const withDatabase = <T>(fn: (db: Database.Database) => T): T => {
    const db = new Database(stack.identity.databasePath, { fileMustExist: true })
    try { return fn(db) } finally { db.close() }
  }
  const storedHash = (key: string): string => withDatabase((db) =>
    db.prepare('SELECT secret_hash FROM api_key_secrets WHERE lookup_id = ?').pluck().get((parseApiKey(key) as { lookupId: string }).lookupId) as string)
  /** A key whose row holds an argon2id hash, as an earlier version stored it. */
  const legacyKey = async (): Promise<string> => {
    const { key } = await stack.createKey(['users:list'])
    const { lookupId, secret } = parseApiKey(key) as { lookupId: string, secret: string }
    const hash = await argon2.hash(secret, LEGACY_ARGON2)
    withDatabase((db) => db.prepare('UPDATE api_key_secrets SET secret_hash = ? WHERE lookup_id = ?').run(hash, lookupId))
    return key
  }
  const unknown = refusal(await users(generateApiKey().key))
  t.equal(unknown.status, 401, 'a key never issued: 401')

  await t.test('300 concurrent random secrets with a real lookup id: no argon2, each answered as unknown; the key works at once', async (t) => {
    const { key } = await stack.createKey(['users:list'])
    const before = await counters(stack)
    const answers = await Promise.all(Array.from({ length: 300 }, async () => await users(withLookupIdOf(key))))
    const after = await counters(stack)
    t.same([...new Set(answers.map((a) => JSON.stringify(refusal(a))))], [JSON.stringify(unknown)], 'every answer is an unknown key\'s')
    t.equal(after.argon2 - before.argon2, 0, 'identity ran no argon2')
    t.ok(after.sha256 - before.sha256 <= 300, `${after.sha256 - before.sha256} SHA-256 checks, at most one per distinct key`)
    t.equal((await users(key)).status, 200, 'the holder\'s key still works')
  })

  await t.test('without its secret, a key\'s state answers exactly like an unknown key; with it, the state is told', async (t) => {
    const table: Array<[state: string, detail: RegExp, make: (id: string, key: string) => Promise<string>]> = [
      ['revoked', /revoked/, async (id, key) => { await stack.identity.admin('POST', `/admin/keys/${id}/revoke`); return key }],
      ['disabled', /disabled/, async (id, key) => { await stack.identity.admin('POST', `/admin/keys/${id}/disable`); return key }],
      ['expired', /expired/, async (id, key) => {
        withDatabase((db) => db.prepare('UPDATE api_keys SET expires_at = ? WHERE id = ?').run(Date.now() - 1_000, id))
        return key
      }],
      ['retired by rotation', /retired by rotation/, async (id, key) => {
        const rotated = await stack.identity.admin('POST', `/admin/keys/${id}/rotate`, { grace_seconds: 0 })
        leaks.secret(rotated.body.key)
        return key
      }]
    ]
    for (const [state, detail, make] of table) {
      const { id, key } = await stack.createKey(['users:list'])
      const old = await make(id, key)
      for (let i = 0; i < 3; i++) t.same(refusal(await users(withLookupIdOf(old))), unknown, `${state}, a random secret: an unknown key's answer`)
      const told = await users(old)
      assertProblem(t, told, 401, 'invalid_api_key', `${state}, its own secret`)
      t.match(told.body.detail, detail, `${state}: the holder learns why`)
    }
  })

  await t.test('a legacy argon2id row: the first use rewrites it as SHA-256, then argon2 stops', async (t) => {
    const key = await legacyKey()
    t.match(storedHash(key), /^\$argon2id\$/, 'stored as an earlier version did')
    const before = await counters(stack)
    t.equal((await users(key)).status, 200, 'the legacy key works')
    const after = await counters(stack)
    t.same([after.argon2 - before.argon2, after.upgrades - before.upgrades], [1, 1], 'one argon2 run, one hash upgraded')
    t.match(storedHash(key), /^sha256\$[A-Za-z0-9_-]{43}$/, 'the row now holds SHA-256')
    for (let i = 0; i < 3; i++) {
      const verify = await http(`${stack.identity.adminUrl}/internal/keys/verify`, { bearer: stack.identity.serviceToken, body: { key } })
      t.equal(verify.body.valid, true, 'identity verifies it (no gateway cache in the way)')
    }
    const later = await counters(stack)
    t.same([later.argon2 - after.argon2, later.sha256 - after.sha256], [0, 3], 'SHA-256 checks only')
  })

  await t.test('40 concurrent wrong secrets on a legacy row: at most 5 argon2 runs, every answer an unknown key\'s', async (t) => {
    const key = await legacyKey()
    const before = await counters(stack)
    const answers = await Promise.all(Array.from({ length: 40 }, async () => await users(withLookupIdOf(key))))
    const after = await counters(stack)
    t.same([...new Set(answers.map((a) => JSON.stringify(refusal(a))))], [JSON.stringify(unknown)], 'all answered as unknown')
    t.ok(after.argon2 - before.argon2 <= LEGACY_BUDGET, `${after.argon2 - before.argon2} argon2 runs, at most ${LEGACY_BUDGET}`)
    t.equal(after.argon2Checks - before.argon2Checks, after.argon2 - before.argon2, 'each one a legacy check')
  })

  await leaks.assertNoLeaks(t)
})
