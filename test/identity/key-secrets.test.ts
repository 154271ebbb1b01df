import t, { type Test } from 'tap'
import argon2 from 'argon2'
import { formatApiKey, parseApiKey } from '../../common/api-key-format.js'
import { randomBase62 } from '../../common/random.js'
import { LEGACY_WRONG_SECRETS_PER_WINDOW, LEGACY_WRONG_SECRET_WINDOW_MS } from '../../identity/services/api-keys.js'
import { createKeySecrets, hashKeySecret } from '../../identity/services/key-secrets.js'
import { createIdentityMetrics } from '../../identity/observability/metrics.js'
import { START, iso } from '../helpers/identity.js'
import { http } from '../helpers/http.js'
import { keyHelpers, startWithAdmin, type AdminSetup } from '../helpers/session-setup.js'

/**
 * API key secrets are stored as SHA-256 (`sha256$<base64url>`): they carry 256 random
 * bits, so argon2id would add nothing but a way to make identity burn CPU. Rows stored
 * as argon2id before still verify, are rewritten as SHA-256 on their first successful
 * verification, and cost at most LEGACY_WRONG_SECRETS_PER_WINDOW argon2 runs per lookup
 * id and window for wrong secrets, however many arrive at once.
 */

/** OWASP's 19 MiB, t=2: what identity used for key secrets before SHA-256. */
const LEGACY_ARGON2 = { type: argon2.argon2id as 2, memoryCost: 19_456, timeCost: 2, parallelism: 1 }
const DAY_MS = 86_400_000

/** identity's labelled counters, one scrape. */
async function counters (s: AdminSetup): Promise<Record<string, number>> {
  const answer = await http(`${s.adminUrl}/metrics`, { bearer: s.serviceToken, headers: { accept: 'text/plain' } })
  const values: Record<string, number> = {}
  for (const match of answer.text.matchAll(/^(portier_identity_(?:argon2_operations|key_verifications|key_secret_checks|key_hash_upgrades)_total)(\{[^}]*\})? (\S+)$/gm)) {
    values[`${match[1] as string}${match[2] ?? ''}`] = Number(match[3])
  }
  return values
}

const ARGON2_KEY_VERIFY = 'portier_identity_argon2_operations_total{operation="verify",purpose="api_key"}'
const SHA256_CHECKS = 'portier_identity_key_secret_checks_total{scheme="sha256"}'
const ARGON2_CHECKS = 'portier_identity_key_secret_checks_total{scheme="argon2id"}'
const UPGRADES = 'portier_identity_key_hash_upgrades_total'
const THROTTLED = 'portier_identity_key_verifications_total{result="throttled"}'
const WRONG = 'portier_identity_key_verifications_total{result="wrong_secret"}'

function moved (before: Record<string, number>, after: Record<string, number>, name: string): number {
  return (after[name] ?? 0) - (before[name] ?? 0)
}

async function setup (t: Test) {
  const s = await startWithAdmin(t)
  const keys = keyHelpers(t, s)
  const storedHash = (lookupId: string): string =>
    s.identity.db.prepare('SELECT secret_hash FROM api_key_secrets WHERE lookup_id = ?').pluck().get(lookupId) as string
  /** A key whose row holds an argon2id hash, as identity stored them before SHA-256. */
  const legacyKey = async (name: string) => {
    const created = await keys.create({ name, permissions: ['users:list'], expires_at: iso(START + DAY_MS) })
    const { lookupId, secret } = parseApiKey(created.key) as { lookupId: string, secret: string }
    s.identity.db.prepare('UPDATE api_key_secrets SET secret_hash = ? WHERE lookup_id = ?').run(await argon2.hash(secret, LEGACY_ARGON2), lookupId)
    t.match(storedHash(lookupId), /^\$argon2id\$/, `${name}: a legacy argon2id row`)
    return { ...created, lookupId }
  }
  const wrongSecretsFor = (lookupId: string, count: number): string[] =>
    Array.from({ length: count }, () => formatApiKey(lookupId, randomBase62(43)))
  return { ...s, keys, storedHash, legacyKey, wrongSecretsFor }
}

t.test('happy: a new key is stored as SHA-256 and verified without argon2', async (t) => {
  const s = await setup(t)
  const before = await counters(s)
  const created = await s.keys.create({ name: 'fresh', permissions: ['users:list'], expires_at: iso(START + DAY_MS) })
  const { lookupId, secret } = parseApiKey(created.key) as { lookupId: string, secret: string }
  t.equal(s.storedHash(lookupId), hashKeySecret(secret), 'sha256$ + base64url of SHA-256(secret)')
  t.match(s.storedHash(lookupId), /^sha256\$[A-Za-z0-9_-]{43}$/)
  for (let i = 0; i < 3; i++) t.match(await s.keys.verify(created.key), { valid: true })
  const after = await counters(s)
  t.equal(moved(before, after, ARGON2_KEY_VERIFY), 0, 'no argon2 run for key secrets')
  t.equal(moved(before, after, SHA256_CHECKS), 3, 'three SHA-256 checks')
})

t.test('happy: a legacy argon2id row verifies once with argon2, is rewritten as SHA-256, and never costs argon2 again', async (t) => {
  const s = await setup(t)
  const legacy = await s.legacyKey('legacy')
  const before = await counters(s)
  t.match(await s.keys.verify(legacy.key), { valid: true, key: { id: legacy.id } }, 'the legacy row verifies')
  const afterFirst = await counters(s)
  t.equal(moved(before, afterFirst, ARGON2_KEY_VERIFY), 1, 'one argon2 run')
  t.equal(moved(before, afterFirst, UPGRADES), 1, 'one hash upgraded')
  t.equal(s.storedHash(legacy.lookupId), hashKeySecret((parseApiKey(legacy.key) as { secret: string }).secret), 'the row now holds the SHA-256 hash')
  for (let i = 0; i < 5; i++) t.match(await s.keys.verify(legacy.key), { valid: true })
  const afterMore = await counters(s)
  t.equal(moved(afterFirst, afterMore, ARGON2_KEY_VERIFY), 0, 'the argon2 count stops')
  t.equal(moved(afterFirst, afterMore, SHA256_CHECKS), 5, 'SHA-256 checks instead')
  t.match((await s.admin('GET', `/admin/keys/${legacy.id}`)).body.api_key.secrets, [{ use_count: 0 }], 'the rewrite is not a use: the gateway reports uses')
})

t.test('happy: 20 concurrent first uses of a legacy row all verify; argon2 runs at most the budget, the rest find SHA-256', async (t) => {
  const s = await setup(t)
  const legacy = await s.legacyKey('popular')
  const before = await counters(s)
  const answers = await Promise.all(Array.from({ length: 20 }, async () => await s.keys.verify(legacy.key)))
  t.ok(answers.every((a) => a.valid === true), 'all 20 valid: none refused for waiting')
  const after = await counters(s)
  t.ok(moved(before, after, ARGON2_KEY_VERIFY) <= LEGACY_WRONG_SECRETS_PER_WINDOW, `${moved(before, after, ARGON2_KEY_VERIFY)} argon2 runs, at most ${LEGACY_WRONG_SECRETS_PER_WINDOW}`)
  t.equal(moved(before, after, SHA256_CHECKS), 20 - moved(before, after, ARGON2_KEY_VERIFY), 'the others were checked against the rewritten row')
  t.equal(moved(before, after, UPGRADES), 1, 'rewritten once')
})

t.test('security: concurrent wrong secrets on a legacy row run argon2 at most the budget, counted before the run', async (t) => {
  const s = await setup(t)
  const legacy = await s.legacyKey('flooded')
  const before = await counters(s)
  const answers = await Promise.all(s.wrongSecretsFor(legacy.lookupId, 30).map(async (key) => await s.keys.verify(key)))
  t.same(new Set(answers.map((a) => JSON.stringify(a))), new Set([JSON.stringify({ valid: false, reason: 'unknown' })]), 'all 30 answer unknown')
  const after = await counters(s)
  t.equal(moved(before, after, ARGON2_KEY_VERIFY), LEGACY_WRONG_SECRETS_PER_WINDOW, `${LEGACY_WRONG_SECRETS_PER_WINDOW} argon2 runs, not 30`)
  t.equal(moved(before, after, WRONG), LEGACY_WRONG_SECRETS_PER_WINDOW, 'those were wrong secrets')
  t.equal(moved(before, after, THROTTLED), 30 - LEGACY_WRONG_SECRETS_PER_WINDOW, 'the rest refused without a check')

  // The budget is per lookup id: another legacy key is checked as usual.
  const other = await s.legacyKey('other')
  t.match(await s.keys.verify(other.key), { valid: true }, 'another legacy key still verifies')

  // While the budget is spent the right secret is refused too (nothing can tell it apart without argon2)…
  t.same(await s.keys.verify(legacy.key), { valid: false, reason: 'unknown' }, 'the right secret during the window: unknown, unchecked')
  t.equal(moved(after, await counters(s), ARGON2_CHECKS), 1, 'only the other key ran argon2')
  // …and verifies once the window has passed, migrating the row.
  s.clock.advance(LEGACY_WRONG_SECRET_WINDOW_MS)
  t.match(await s.keys.verify(legacy.key), { valid: true }, 'after the window the right secret verifies')
  t.match(s.storedHash(legacy.lookupId), /^sha256\$/, 'and the row is rewritten')
})

t.test('security: a legacy row\'s check costs the same whatever the key\'s state, and tells the state only to the secret', async (t) => {
  const s = await setup(t)
  const legacy = await s.legacyKey('revoked-legacy')
  t.equal((await s.admin('POST', `/admin/keys/${legacy.id}/revoke`)).status, 200)
  const before = await counters(s)
  t.same(await s.keys.verify(s.wrongSecretsFor(legacy.lookupId, 1)[0] as string), { valid: false, reason: 'unknown' }, 'a wrong secret: unknown')
  t.equal(moved(before, await counters(s), ARGON2_KEY_VERIFY), 1, 'checked with argon2 like an active key (no timing tell)')
  t.same(await s.keys.verify(legacy.key), { valid: false, reason: 'revoked' }, 'the right secret: revoked')
})

t.test('security: SHA-256 rows are never locked out by wrong secrets', async (t) => {
  const s = await setup(t)
  const created = await s.keys.create({ name: 'busy', permissions: ['users:list'], expires_at: iso(START + DAY_MS) })
  const { lookupId } = parseApiKey(created.key) as { lookupId: string }
  const answers = await Promise.all(s.wrongSecretsFor(lookupId, 60).map(async (key) => await s.keys.verify(key)))
  t.ok(answers.every((a) => a.valid === false && a.reason === 'unknown'), '60 wrong secrets: unknown')
  t.match(await s.keys.verify(created.key), { valid: true }, 'the holder\'s key still verifies at once')
})

t.test('unit: stored values that are not a well-formed hash never authenticate', async (t) => {
  const metrics = createIdentityMetrics({ processMetrics: false })
  let legacyCalls = 0
  const secrets = createKeySecrets({ verify: async () => { legacyCalls++; return false } }, metrics)
  const secret = randomBase62(43)
  const good = secrets.hash(secret)
  t.same(await secrets.verify(good, secret), { valid: true, upgradedHash: null })
  t.same(await secrets.verify(good, randomBase62(43)), { valid: false, upgradedHash: null })
  for (const stored of ['sha256$', `${good}A`, good.slice(0, -1), 'sha256$!!!!', '']) {
    t.equal((await secrets.verify(stored, secret)).valid, false, `stored ${JSON.stringify(stored.slice(0, 12))}…`)
  }
  t.equal(secrets.schemeOf(good), 'sha256')
  t.equal(secrets.schemeOf('$argon2id$v=19$m=19456,t=2,p=1$abc$def'), 'argon2id')
  t.equal(legacyCalls, 1, 'only the value without the sha256$ prefix went to argon2 (the empty one)')
})
