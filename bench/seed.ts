import { randomBytes } from 'node:crypto'
import { formatApiKey, lastFourOf, randomLookupId, randomSecret } from '../common/api-key-format.js'
import { createMemoryEventBus } from '../common/event-bus.js'
import { newId } from '../common/random.js'
import { MAX_RATE_LIMIT, type RatePolicy } from '../common/traffic/policy.js'
import { loadIdentityCliConfig } from '../identity/config.js'
import { systemClock } from '../identity/services/clock.js'
import { createIdentityServices } from '../identity/services/index.js'
import { hashKeySecret } from '../identity/services/key-secrets.js'
import { createApiKeysStore } from '../identity/store/api-keys-store.js'
import { openDatabase } from '../identity/store/database.js'

/** What the load presents: nothing here is stored in clear by identity. */
export interface BenchAccounts {
  user: { email: string, password: string }
  /** A key made by identity itself, allowed users:list. */
  apiKey: string
  /** The first `trafficKeys` of the many seeded keys. */
  trafficKeys: string[]
  /** A key like `apiKey`, made by identity, with one policy of its own: BENCH_RATE_POLICY. */
  limitedApiKey: string
  /** `limitedTrafficKeys` more keys, each with BENCH_RATE_POLICY: each its own count. */
  limitedTrafficKeys: string[]
}

export const BENCH_PERMISSIONS = ['users:list']

/**
 * The per-key rate limit of the rate-limit scenarios: far above any load the bench
 * sends (a few thousand requests per second on 2 cores), so that no request is ever
 * refused and the scenarios measure only what counting costs. The largest rate limit
 * a policy may have, up to 100 000 a second.
 */
export const BENCH_RATE_POLICY: RatePolicy = { name: 'bench-limit', kind: 'rate', limit: Math.min(100_000, MAX_RATE_LIMIT), window_seconds: 1, partition: 'key' }

const DAY_MS = 86_400_000

/**
 * Fills a new identity database before identity starts: a role and a user for Bearer
 * and login traffic, one real API key and one with a per-key rate limit,
 * `manyKeys` more keys for the cache scenario and `limitedTrafficKeys` more, each
 * with its own rate limit. Goes through identity's own services and store, like the CLI.
 */
export async function seedIdentity (env: Record<string, string>, options: { manyKeys: number, trafficKeys: number, limitedTrafficKeys: number }): Promise<BenchAccounts> {
  const config = loadIdentityCliConfig(env)
  const db = openDatabase(config.databasePath)
  try {
    const services = await createIdentityServices(config, { db, events: createMemoryEventBus(), clock: systemClock })
    // The bench user's requests are counted against a per-user limit far above the load, as in production.
    await services.roles.set('reader', BENCH_PERMISSIONS, [{ ...BENCH_RATE_POLICY, name: 'bench-user-limit', partition: 'user' }])
    const user = { email: 'bench@example.com', password: randomBytes(16).toString('base64url') }
    await services.users.create({ ...user, roles: ['reader'] })
    const expiresAt = systemClock.now() + DAY_MS
    const created = await services.apiKeys.create({ name: 'bench-key', permissions: BENCH_PERMISSIONS, expiresAt })
    const limited = await services.apiKeys.create({ name: 'bench-key-limited', permissions: BENCH_PERMISSIONS, expiresAt, policies: [BENCH_RATE_POLICY] })

    // The many keys share one secret (and so one stored SHA-256 hash, as identity writes it) and differ by lookup id.
    const secret = randomSecret()
    const secretHash = hashKeySecret(secret)
    const store = createApiKeysStore(db)
    const trafficKeys: string[] = []
    const limitedTrafficKeys: string[] = []
    const now = systemClock.now()
    db.transaction(() => {
      for (let i = 0; i < options.manyKeys; i++) {
        const lookupId = randomLookupId()
        const key = formatApiKey(lookupId, secret)
        store.insert({ id: newId('key'), name: `bench-${i}`, permissions: BENCH_PERMISSIONS, expiresAt, policies: [], ownerUserId: null }, { lookupId, secretHash, last4: lastFourOf(key) }, now)
        if (i < options.trafficKeys) trafficKeys.push(key)
      }
      // Each its own key record, so each its own count under a `key` partition.
      for (let i = 0; i < options.limitedTrafficKeys; i++) {
        const lookupId = randomLookupId()
        const key = formatApiKey(lookupId, secret)
        store.insert({ id: newId('key'), name: `bench-limited-${i}`, permissions: BENCH_PERMISSIONS, expiresAt, policies: [BENCH_RATE_POLICY], ownerUserId: null }, { lookupId, secretHash, last4: lastFourOf(key) }, now)
        limitedTrafficKeys.push(key)
      }
    })()
    return { user, apiKey: created.secret, trafficKeys, limitedApiKey: limited.secret, limitedTrafficKeys }
  } finally {
    db.close()
  }
}

/** Well-formed keys (valid checksum) whose lookup ids identity has never issued. */
export function unknownKeys (count: number): string[] {
  return Array.from({ length: count }, () => formatApiKey(randomLookupId(), randomSecret()))
}

/** Well-formed keys with a real lookup id and a wrong secret: each costs identity a SHA-256 check, never argon2. */
export function wrongSecretsFor (key: string, count: number): string[] {
  const lookupId = key.split('_')[1] as string
  return Array.from({ length: count }, () => formatApiKey(lookupId, randomSecret()))
}
