import t from 'tap'
import { createHash } from 'node:crypto'
import { Redis } from 'ioredis'
import { API_KEY_PREFIX, generateApiKey } from '../../common/api-key-format.js'
import { bytesToBase62 } from '../../common/random.js'
import { assertJson, assertProblem, assertStatus } from '../helpers/assert.js'
import { startStack } from '../helpers/gateway.js'
import { iso } from '../helpers/identity.js'
import {
  VERIFY_PATH, assertRefused, getWithHeaders, identityRequests, keyCacheCount, metricSum, pollUntil, sleep
} from '../helpers/gateway-auth.js'

/**
 * API keys at the gateway: which
 * credential problems are answered how, the checksum refusing typos without I/O,
 * the two cache tiers and what each may hold, single-flight and negative caching,
 * expiry bounding every cache entry, and rotation's grace period.
 *
 * The L1 and L2 TTLs are an hour here, so anything refused below is refused by the
 * rule under test, not because a cache entry happened to expire.
 */

const KEY_CACHE = { l1TtlSeconds: 3_600, l2TtlSeconds: 3_600, negativeTtlSeconds: 60 }
const ENTRY_PREFIX = 'portier:key:'
const INDEX_PREFIX = 'portier:key-index:'

const withKey = (key: string): { headers: Record<string, string> } => ({ headers: { 'x-api-key': key } })
/** The secret part of a key: between the lookup id and the checksum. */
const secretOf = (key: string): string => key.slice(API_KEY_PREFIX.length + 13, -6)
/** A key body with a correct checksum: isolates the rule under test from the checksum. */
const withChecksum = (body: string): string => body + bytesToBase62(createHash('sha256').update(body).digest().subarray(0, 8), 6)

/** Every key in Redis with every string its value holds, whatever the type. */
async function redisContents (redis: Redis): Promise<Map<string, string[]>> {
  const contents = new Map<string, string[]>()
  for await (const batch of redis.scanStream({ count: 200 })) {
    for (const name of batch as string[]) {
      const type = await redis.type(name)
      const values = type === 'string'
        ? [await redis.get(name) ?? '']
        : type === 'set'
          ? await redis.smembers(name)
          : type === 'zset'
            ? await redis.zrange(name, 0, -1)
            : type === 'hash'
              ? Object.entries(await redis.hgetall(name)).flat()
              : type === 'list' ? await redis.lrange(name, 0, -1) : [`<${type}>`]
      contents.set(name, values)
    }
  }
  return contents
}

t.test('API keys at the gateway', async (t) => {
  const s = await startStack(t, { gateway: { keyCache: KEY_CACHE } })
  const { gateway } = s
  const replica = await s.addGateway()
  const verifies = async (): Promise<number> => await identityRequests(s, VERIFY_PATH)
  /** Every key this suite used successfully, for the "nothing raw in Redis" check. */
  const usedKeys: string[] = []

  await t.test('no credential: 401 credentials_missing with a bare challenge', async (t) => {
    const answer = await gateway.call('/users')
    assertProblem(t, answer, 401, 'credentials_missing', 'no credential')
    t.equal(answer.headers['www-authenticate'], 'Bearer realm="portier"', 'RFC 6750 §3.1: no error code when no credential was sent')
  })

  await t.test('x-api-key and Bearer at once: 400 conflicting_credentials, no lookup', async (t) => {
    const key = await s.createKey(['users:list'])
    const tokens = await s.login()
    const before = await verifies()
    const answer = await gateway.call('/users', { headers: { 'x-api-key': key.key, authorization: `Bearer ${tokens.access_token}` } })
    assertProblem(t, answer, 400, 'conflicting_credentials', 'both credentials')
    t.notOk(answer.text.includes(secretOf(key.key)) || answer.text.includes(tokens.access_token), 'the answer echoes neither credential')
    t.equal(await verifies(), before, 'identity was not asked')
  })

  await t.test('malformed keys: 401 invalid_api_key without asking identity', async (t) => {
    const { key } = await s.createKey(['users:list'])
    const body = key.slice(0, -6)
    t.equal(withChecksum(body), key, 'control: this suite computes checksums as identity does')
    const last = key.at(-1) === 'A' ? 'B' : 'A'
    const cases: Array<[string, string | string[]]> = [
      ['a wrong checksum (one character changed)', key.slice(0, -1) + last],
      ['a secret with one character changed', `${key.slice(0, 20)}${key[20] === 'a' ? 'b' : 'a'}${key.slice(21)}`],
      ['another prefix, checksum recomputed', withChecksum(`ptx_${body.slice(API_KEY_PREFIX.length)}`)],
      ['the prefix upper-cased, checksum recomputed', withChecksum(`PTK_${body.slice(API_KEY_PREFIX.length)}`)],
      ['a secret one character short, checksum recomputed', withChecksum(body.slice(0, -1))],
      ['an empty x-api-key', ''],
      ['random text', 'not-an-api-key'],
      ['two x-api-key headers, each a valid key', [key, key]]
    ]
    const before = await verifies()
    for (const [label, value] of cases) {
      const answer = await getWithHeaders(`${gateway.url}/users`, { 'x-api-key': value })
      assertRefused(t, answer, 'invalid_api_key', label)
      t.match(answer.body.detail, /malformed/, `${label}: the detail says malformed`)
      t.notOk(answer.text.includes(secretOf(key)), `${label}: the answer does not echo the key`)
    }
    t.equal(await verifies(), before, 'identity was asked about none of them')
    assertJson(t, await gateway.call('/users', withKey(key)), 200, 'control: the key itself is accepted')
  })

  await t.test('well-formed keys identity refuses: 401 invalid_api_key', async (t) => {
    const before = await verifies()
    const unknown = await gateway.call('/users', withKey(generateApiKey().key))
    assertRefused(t, unknown, 'invalid_api_key', 'a well-formed key of an unknown id')
    t.match(unknown.body.detail, /unknown/, 'the detail says unknown')
    t.equal(await verifies(), before + 1, 'identity was asked once')

    const revoked = await s.createKey(['users:list'])
    assertStatus(t, await s.admin('POST', `/admin/keys/${revoked.id}/revoke`), 200, 'key revoked')
    const revokedAnswer = await gateway.call('/users', withKey(revoked.key))
    assertRefused(t, revokedAnswer, 'invalid_api_key', 'a revoked key')
    t.match(revokedAnswer.body.detail, /revoked/, 'the detail says revoked')

    const disabled = await s.createKey(['users:list'])
    assertStatus(t, await s.admin('POST', `/admin/keys/${disabled.id}/disable`), 200, 'key disabled')
    const disabledAnswer = await gateway.call('/users', withKey(disabled.key))
    assertRefused(t, disabledAnswer, 'invalid_api_key', 'a disabled key')
    t.match(disabledAnswer.body.detail, /disabled/, 'the detail says disabled')
  })

  await t.test('L1 answers a key after its first use; a replica answers it from L2', async (t) => {
    const key = await s.createKey(['users:list'])
    usedKeys.push(key.key)
    const before = { verifies: await verifies(), l1: await keyCacheCount(gateway, 'l1', 'hit'), l2: await keyCacheCount(replica, 'l2', 'hit') }
    assertJson(t, await gateway.call('/users', withKey(key.key)), 200, 'first use')
    t.equal(await verifies(), before.verifies + 1, 'the first use asked identity')
    for (let i = 0; i < 3; i++) assertJson(t, await gateway.call('/users', withKey(key.key)), 200, `use ${i + 2}`)
    t.equal(await keyCacheCount(gateway, 'l1', 'hit'), before.l1 + 3, 'the next three were L1 hits')

    const fromL2 = await replica.call('/users', withKey(key.key))
    assertJson(t, fromL2, 200, 'the replica accepts the key')
    t.equal(fromL2.headers['x-upstream-principal'], key.id, 'the replica forwarded the key as principal')
    t.equal(await keyCacheCount(replica, 'l2', 'hit'), before.l2 + 1, 'the replica found it in L2')
    t.equal(await verifies(), before.verifies + 1, 'neither the L1 hits nor the replica asked identity again')
  })

  await t.test('20 concurrent first uses of a key: one identity call', async (t) => {
    const key = await s.createKey(['users:list'])
    usedKeys.push(key.key)
    const before = await verifies()
    const answers = await Promise.all(Array.from({ length: 20 }, async () => await gateway.call('/users?per_page=1', withKey(key.key))))
    t.same(answers.map((a) => a.status), Array(20).fill(200), 'all 20 accepted')
    t.equal(await verifies(), before + 1, 'identity verified the key exactly once')
  })

  await t.test('a refused key is cached briefly, in L1 only', async (t) => {
    const unknown = generateApiKey().key
    const before = { verifies: await verifies(), negative: await keyCacheCount(gateway, 'l1', 'negative_hit') }
    for (let i = 0; i < 10; i++) assertRefused(t, await gateway.call('/users', withKey(unknown)), 'invalid_api_key', `unknown key, try ${i + 1}`)
    t.equal(await verifies(), before.verifies + 1, 'ten refusals, one identity call')
    t.equal(await keyCacheCount(gateway, 'l1', 'negative_hit'), before.negative + 9, 'nine answered by the negative cache')
    assertRefused(t, await replica.call('/users', withKey(unknown)), 'invalid_api_key', 'the unknown key on the replica')
    t.equal(await verifies(), before.verifies + 2, 'the replica asked identity itself: refusals are not shared through Redis')

    const brief = await s.addGateway({ keyCache: { ...KEY_CACHE, negativeTtlSeconds: 0.3 } })
    const other = generateApiKey().key
    const start = await verifies()
    assertRefused(t, await brief.call('/users', withKey(other)), 'invalid_api_key', 'negative TTL 0.3 s: first try')
    assertRefused(t, await brief.call('/users', withKey(other)), 'invalid_api_key', 'negative TTL 0.3 s: second try')
    t.equal(await verifies(), start + 1, 'within the negative TTL: one identity call')
    await sleep(400)
    assertRefused(t, await brief.call('/users', withKey(other)), 'invalid_api_key', 'negative TTL 0.3 s: after it')
    t.equal(await verifies(), start + 2, 'after the negative TTL identity is asked again')
  })

  await t.test('Redis holds no raw key, secret or unsalted hash of one', async (t) => {
    const redis = new Redis(s.redis.url)
    t.teardown(() => redis.disconnect())
    const contents = await redisContents(redis)
    const names = [...contents.keys()]
    t.ok(names.some((n) => n.startsWith(ENTRY_PREFIX)), 'L2 holds key entries (the check below is not vacuous)')
    t.ok(names.some((n) => n.startsWith(INDEX_PREFIX)), 'and their index by key id')
    t.ok(usedKeys.length >= 2, 'keys were used through the gateway')
    const forbidden = usedKeys.flatMap((key) => [
      key, secretOf(key),
      createHash('sha256').update(key).digest('hex'), createHash('sha256').update(key).digest('base64url'),
      createHash('sha256').update(secretOf(key)).digest('hex'), createHash('sha256').update(secretOf(key)).digest('base64url')
    ])
    const leaks = [...contents].filter(([name, values]) => [name, ...values].some((text) => forbidden.some((f) => text.includes(f))))
    // Names only in the message: a leak's value is the secret itself.
    t.same(leaks.map(([name]) => name), [], 'no Redis key name or value contains a key, its secret or a plain hash of either')
  })

  await t.test('a cached key is refused once it expires, without any event', async (t) => {
    const key = await s.createKey(['users:list'], { expires_at: iso(s.clock.now() + 60_000) })
    usedKeys.push(key.key)
    assertJson(t, await gateway.call('/users', withKey(key.key)), 200, 'used before its expiry')
    assertJson(t, await replica.call('/users', withKey(key.key)), 200, 'used on the replica (from L2)')
    const l1 = await keyCacheCount(gateway, 'l1', 'hit')
    assertJson(t, await gateway.call('/users', withKey(key.key)), 200, 'used again')
    t.equal(await keyCacheCount(gateway, 'l1', 'hit'), l1 + 1, 'answered by L1, whose TTL is an hour')

    const redis = new Redis(s.redis.url)
    t.teardown(() => redis.disconnect())
    const [entry] = await redis.smembers(INDEX_PREFIX + key.id)
    const ttl = await redis.pttl(ENTRY_PREFIX + (entry ?? ''))
    t.ok(ttl > 0 && ttl <= 60_000, `the L2 entry lives no longer than the key (${ttl} ms left of at most 60000)`)

    const events = await metricSum(gateway, 'portier_gateway_invalidation_events_total')
    s.clock.advance(61_000)
    for (const [name, g] of [['gateway', gateway], ['replica', replica]] as const) {
      const answer = await g.call('/users', withKey(key.key))
      assertRefused(t, answer, 'invalid_api_key', `${name}: 61 s later`)
      t.match(answer.body.detail, /expired/, `${name}: the detail says expired`)
    }
    t.equal(await metricSum(gateway, 'portier_gateway_invalidation_events_total'), events, 'no invalidation event was involved')
  })

  await t.test('rotation: the old secret works with Deprecation and Sunset until the grace ends', async (t) => {
    const old = await s.createKey(['users:list'])
    usedKeys.push(old.key)
    for (const g of [gateway, replica]) {
      const answer = await g.call('/users', withKey(old.key))
      assertJson(t, answer, 200, 'the key before rotation')
      t.notOk('deprecation' in answer.headers || 'sunset' in answer.headers, 'no Deprecation or Sunset before rotation')
    }
    const rotatedAt = s.clock.now()
    const rotation = await s.admin('POST', `/admin/keys/${old.id}/rotate`, { grace_seconds: 3_600 })
    assertStatus(t, rotation, 200, 'rotated with an hour of grace')
    const fresh = rotation.body.key as string
    usedKeys.push(fresh)
    const deprecation = `@${Math.floor(rotatedAt / 1000)}`
    const sunset = new Date(rotatedAt + 3_600_000).toUTCString()

    for (const [name, g] of [['gateway', gateway], ['replica', replica]] as const) {
      // The cached verification of the old secret predates the rotation; the key.rotated event evicts it.
      const waited = await pollUntil(async () => (await g.call('/users', withKey(old.key))).headers.deprecation !== undefined, { timeoutMs: 1_000 })
      t.not(waited, null, `${name}: the old secret is marked deprecated within 1 s of the rotation (${String(waited)} ms)`)
      for (const use of ['first', 'cached']) {
        const answer = await g.call('/users', withKey(old.key))
        assertJson(t, answer, 200, `${name}: the old secret still works (${use} use)`)
        t.equal(answer.headers.deprecation, deprecation, `${name}: Deprecation is @<unix seconds> of the rotation (RFC 9745)`)
        t.equal(answer.headers.sunset, sunset, `${name}: Sunset is the HTTP-date the grace ends (RFC 8594)`)
      }
      const answer = await g.call('/users', withKey(fresh))
      assertJson(t, answer, 200, `${name}: the new secret works`)
      t.notOk('deprecation' in answer.headers || 'sunset' in answer.headers, `${name}: without Deprecation or Sunset`)
      t.equal(answer.headers['x-upstream-principal'], old.id, `${name}: the same key record`)
    }

    s.clock.advance(3_601_000)
    for (const [name, g] of [['gateway', gateway], ['replica', replica]] as const) {
      const answer = await g.call('/users', withKey(old.key))
      assertRefused(t, answer, 'invalid_api_key', `${name}: the old secret after the grace`)
      t.match(answer.body.detail, /retired by rotation/, `${name}: the detail says it was retired`)
      assertJson(t, await g.call('/users', withKey(fresh)), 200, `${name}: the new secret still works`)
    }
  })
})
