import t from 'tap'
import { Registry } from 'prom-client'
import { generateApiKey } from '../../../common/api-key-format.js'
import { createApiKeyVerifier, type ApiKeyVerifierOptions } from '../../../gateway/auth/api-key-verifier.js'
import type { KeyVerdict } from '../../../gateway/auth/identity-client.js'
import { createNoKeyCacheL2, type KeyCacheL2 } from '../../../gateway/auth/key-cache-l2.js'
import { createHotCounter, type HotCounter } from '../../../gateway/observability/hot-counter.js'
import { deferred, fakeClock, memoryL2, settle, sleep, type Clock, type Deferred } from '../../helpers/auth-caches.js'

/**
 * The API key verifier's tiers (L1, refusals, L2, identity) and its guarantee that a
 * verification in flight during an eviction is not cached: a fake identity, an L2 in
 * memory, and a clock moved by hand. L1 and refusal TTLs run on lru-cache's own
 * clock (real time, whatever `now` says), so those two wait a few real milliseconds.
 */

const HOUR = 3_600_000
const SHORT_TTL_MS = 40

interface FakeIdentity {
  verifyKey: (key: string) => Promise<KeyVerdict>
  calls: number
  /** What identity answers next, per presented key (a function of the call, or a promise the test settles). */
  answer: (key: string, verdict: KeyVerdict | Deferred<KeyVerdict>) => void
}

function fakeIdentity (): FakeIdentity {
  const answers = new Map<string, KeyVerdict | Deferred<KeyVerdict>>()
  const identity: FakeIdentity = {
    calls: 0,
    async verifyKey (key) {
      identity.calls++
      const answer = answers.get(key)
      if (answer === undefined) return { valid: false, reason: 'unknown' }
      return 'promise' in answer ? await answer.promise : answer
    },
    answer (key, verdict) { answers.set(key, verdict) }
  }
  return identity
}

const valid = (id: string, permissions: string[], expiresAt: number | null = null): KeyVerdict =>
  ({ valid: true, key: { id, name: id, permissions, expires_at: expiresAt === null ? null : new Date(expiresAt).toISOString() }, deprecation: null })

function keyCacheCounter (): HotCounter<'tier' | 'result'> {
  return createHotCounter({ name: 'key_cache_total', help: 'test', labelNames: ['tier', 'result'] as const, registry: new Registry() })
}

async function count (counter: HotCounter<'tier' | 'result'>, tier: string, result: string): Promise<number> {
  return (await counter.counter.get()).values.find((v) => v.labels.tier === tier && v.labels.result === result)?.value ?? 0
}

interface Setup {
  identity: FakeIdentity
  clock: Clock
  counter: HotCounter<'tier' | 'result'>
  verifier: ReturnType<typeof createApiKeyVerifier>
}

function setup (options: { l2?: KeyCacheL2, clock?: Clock, identity?: FakeIdentity } & Partial<ApiKeyVerifierOptions> = {}): Setup {
  const clock = options.clock ?? fakeClock()
  const identity = options.identity ?? fakeIdentity()
  const counter = keyCacheCounter()
  const verifier = createApiKeyVerifier({
    identity,
    l2: options.l2 ?? createNoKeyCacheL2(),
    hmacKey: Buffer.alloc(32, 7),
    l1MaxEntries: 100,
    l1TtlMs: options.l1TtlMs ?? HOUR,
    l2TtlMs: options.l2TtlMs ?? HOUR,
    negativeTtlMs: options.negativeTtlMs ?? HOUR,
    metrics: { keyCache: counter },
    now: clock.now
  })
  return { identity, clock, counter, verifier }
}

/** A verification of a new key, started and waiting on identity's answer, which the test gives. */
async function verificationInFlight (identity: FakeIdentity, verifier: Setup['verifier']) {
  const { key } = generateApiKey()
  const answer = deferred<KeyVerdict>()
  identity.answer(key, answer)
  const inFlight = verifier.verify(key)
  await settle()
  return { key, answer, inFlight }
}

/** A key verified once through a memory L2 shared by replicas: where the eviction races start. */
async function verifiedThroughL2 (): Promise<{ clock: Clock, l2: ReturnType<typeof memoryL2>, identity: FakeIdentity, key: string }> {
  const clock = fakeClock()
  const l2 = memoryL2(clock.now)
  const { identity, verifier } = setup({ clock, l2 })
  const { key } = generateApiKey()
  identity.answer(key, valid('key_1', ['users:list']))
  await verifier.verify(key)
  return { clock, l2, identity, key }
}

t.test('L1: a verified key is answered from memory', async (t) => {
  const { identity, counter, verifier } = setup()
  const { key } = generateApiKey()
  identity.answer(key, valid('key_1', ['users:list']))

  t.match(await verifier.verify(key), { valid: true, key: { id: 'key_1', permissions: ['users:list'], deprecation: null } }, 'first use: valid')
  t.equal(identity.calls, 1, 'first use: identity asked')
  t.match(await verifier.verify(key), { valid: true, key: { id: 'key_1' } }, 'second use: valid')
  t.equal(identity.calls, 1, 'second use: identity not asked')
  t.equal(await count(counter, 'l1', 'hit'), 1, 'second use: an L1 hit')
  t.equal(await count(counter, 'l2', 'miss'), 1, 'without L2, the first use counted as an L2 miss')
  t.equal(await count(counter, 'identity', 'valid'), 1, 'and as a valid verdict of identity')
})

t.test('L1: past its TTL, a key goes back to identity (without L2)', async (t) => {
  const { identity, verifier } = setup({ l1TtlMs: SHORT_TTL_MS })
  const { key } = generateApiKey()
  identity.answer(key, valid('key_1', ['users:list']))
  t.ok((await verifier.verify(key)).valid, 'valid')
  await sleep(SHORT_TTL_MS * 2)
  t.ok((await verifier.verify(key)).valid, 'past the L1 TTL: still valid')
  t.equal(identity.calls, 2, 'past the L1 TTL: identity asked again')
})

t.test('a malformed key is refused without any lookup', async (t) => {
  const { identity, counter, verifier } = setup()
  const { key } = generateApiKey()
  const typo = `${key.slice(0, -1)}${key.endsWith('A') ? 'B' : 'A'}`
  t.same(await verifier.verify(typo), { valid: false, reason: 'malformed' }, 'refused as malformed')
  t.equal(identity.calls, 0, 'identity not asked')
  t.equal(await count(counter, 'l1', 'miss'), 0, 'no cache consulted')
})

t.test('concurrent misses for one key share one identity call', async (t) => {
  const { identity, verifier } = setup()
  const { key } = generateApiKey()
  const answer = deferred<KeyVerdict>()
  identity.answer(key, answer)
  const checks = Promise.all(Array.from({ length: 5 }, async () => await verifier.verify(key)))
  await settle()
  answer.resolve(valid('key_1', ['users:list']))
  t.ok((await checks).every((check) => check.valid), 'all five valid')
  t.equal(identity.calls, 1, 'one identity call')
})

t.test('L2: fills L1, shared by replicas, until the L2 TTL', async (t) => {
  const clock = fakeClock()
  const l2 = memoryL2(clock.now)
  const identity = fakeIdentity()
  const a = setup({ clock, identity, l2, l2TtlMs: 60_000 })
  const b = setup({ clock, identity, l2, l2TtlMs: 60_000 })
  const { key } = generateApiKey()
  identity.answer(key, valid('key_1', ['users:list']))

  t.ok((await a.verifier.verify(key)).valid, 'replica A: valid')
  t.equal(identity.calls, 1, 'replica A asked identity')
  t.equal(l2.entries.size, 1, 'and wrote L2')
  t.equal([...l2.entries.values()][0]?.until, clock.now() + 60_000, 'the entry lasts the L2 TTL')
  t.notOk([...l2.entries.keys()][0]?.includes(key), 'L2 is keyed by an HMAC, never the key')

  t.match(await b.verifier.verify(key), { valid: true, key: { id: 'key_1', permissions: ['users:list'] } }, 'replica B: valid')
  t.equal(identity.calls, 1, 'replica B: from L2, identity not asked')
  t.equal(await count(b.counter, 'l2', 'hit'), 1, 'replica B: an L2 hit')
  const reads = l2.calls.read
  t.ok((await b.verifier.verify(key)).valid, 'replica B again')
  t.equal(l2.calls.read, reads, 'replica B again: from its L1, L2 not read')
  t.equal(await count(b.counter, 'l1', 'hit'), 1, 'replica B again: an L1 hit')

  clock.advance(60_000)
  t.ok((await b.verifier.verify(key)).valid, 'past the L2 TTL: still valid')
  t.equal(identity.calls, 2, 'past the L2 TTL: neither L1 nor L2 is trusted, identity asked again')
})

t.test('no tier trusts a key past its own expiry', async (t) => {
  const clock = fakeClock()
  const l2 = memoryL2(clock.now)
  const { identity, verifier } = setup({ clock, l2 })
  const { key } = generateApiKey()
  identity.answer(key, valid('key_1', ['users:list'], clock.now() + 5_000))
  t.ok((await verifier.verify(key)).valid, 'valid before its expiry')
  t.equal([...l2.entries.values()][0]?.until, clock.now() + 5_000, 'the L2 entry ends with the key')
  clock.advance(4_999)
  t.ok((await verifier.verify(key)).valid, 'just before its expiry: from L1')
  t.equal(identity.calls, 1, 'identity asked once so far')
  clock.advance(1)
  identity.answer(key, { valid: false, reason: 'expired' })
  t.same(await verifier.verify(key), { valid: false, reason: 'expired' }, 'at its expiry: identity says expired')
  t.equal(identity.calls, 2, 'neither L1 nor L2 answered')
})

t.test('refusals: cached in L1, cleared by any eviction', async (t) => {
  const { identity, counter, verifier } = setup()
  const { key } = generateApiKey()
  identity.answer(key, { valid: false, reason: 'disabled' })
  t.same(await verifier.verify(key), { valid: false, reason: 'disabled' }, 'refused')
  t.same(await verifier.verify(key), { valid: false, reason: 'disabled' }, 'refused again')
  t.equal(identity.calls, 1, 'the second refusal came from the cache')
  t.equal(await count(counter, 'l1', 'negative_hit'), 1, 'counted as a negative hit')

  // A key.enabled event names the key by id; the refusal is cached under the presented key, so all refusals go.
  identity.answer(key, valid('key_1', ['users:list']))
  t.notOk((await verifier.verify(key)).valid, 'enabled at identity, but still refused from the cache')
  await verifier.evict('key_other')
  t.ok((await verifier.verify(key)).valid, 'after an eviction (of any key): valid')
  t.equal(identity.calls, 2, 'identity asked after the eviction')
})

t.test('refusals: past their TTL, identity is asked again', async (t) => {
  const { identity, verifier } = setup({ negativeTtlMs: SHORT_TTL_MS })
  const { key } = generateApiKey()
  identity.answer(key, { valid: false, reason: 'disabled' })
  await verifier.verify(key)
  await sleep(SHORT_TTL_MS * 2)
  identity.answer(key, valid('key_1', ['users:list']))
  t.ok((await verifier.verify(key)).valid, 'past the refusal TTL: valid')
  t.equal(identity.calls, 2, 'identity asked again')
})

t.test('an eviction forgets the key in L1 and L2', async (t) => {
  const clock = fakeClock()
  const l2 = memoryL2(clock.now)
  const { identity, verifier } = setup({ clock, l2 })
  const { key } = generateApiKey()
  const other = generateApiKey().key
  identity.answer(key, valid('key_1', ['users:list']))
  identity.answer(other, valid('key_2', ['users:list']))
  await verifier.verify(key)
  await verifier.verify(other)
  t.equal(l2.entries.size, 2, 'both in L2')
  await verifier.evict('key_1')
  t.same([...l2.entries.values()].map((entry) => entry.id), ['key_2'], 'L2: only the other key left')
  identity.answer(key, { valid: false, reason: 'revoked' })
  t.same(await verifier.verify(key), { valid: false, reason: 'revoked' }, 'the evicted key: identity refuses it')
  t.ok((await verifier.verify(other)).valid, 'the other key: still valid')
  t.equal(identity.calls, 3, 'the other key still from L1')
})

t.test('an eviction while a verification is in flight', async (t) => {
  await t.test('of the same key: the verdict answers that request only, and is cached nowhere', async (t) => {
    const clock = fakeClock()
    const l2 = memoryL2(clock.now)
    const { identity, verifier } = setup({ clock, l2 })
    const { key, answer, inFlight } = await verificationInFlight(identity, verifier)
    await verifier.evict('key_1')
    // Identity answered before it applied the change: the verdict is stale.
    answer.resolve(valid('key_1', ['users:list']))
    t.ok((await inFlight).valid, 'the request in flight gets the verdict it waited for')
    t.equal(l2.entries.size, 0, 'not written to L2')
    identity.answer(key, { valid: false, reason: 'revoked' })
    t.same(await verifier.verify(key), { valid: false, reason: 'revoked' }, 'the next request: asked identity again, refused')
    t.equal(identity.calls, 2, 'not answered from L1')
  })

  await t.test('of another key: a refusal is not cached (it may predate an enable)', async (t) => {
    const { identity, verifier } = setup()
    const { key, answer, inFlight } = await verificationInFlight(identity, verifier)
    await verifier.evict('key_other')
    answer.resolve({ valid: false, reason: 'disabled' })
    t.notOk((await inFlight).valid, 'the request in flight is refused')
    identity.answer(key, valid('key_1', ['users:list']))
    t.ok((await verifier.verify(key)).valid, 'the next request asks identity: valid')
  })

  await t.test('of another key: a valid verdict is cached as usual', async (t) => {
    const { identity, verifier } = setup()
    const { key, answer, inFlight } = await verificationInFlight(identity, verifier)
    await verifier.evict('key_other')
    answer.resolve(valid('key_1', ['users:list']))
    t.ok((await inFlight).valid, 'valid')
    await verifier.verify(key)
    t.equal(identity.calls, 1, 'the next request: from L1')
  })

  await t.test('an L2 entry read before the eviction finished is not trusted', async (t) => {
    const clock = fakeClock()
    const l2 = memoryL2(clock.now)
    const identity = fakeIdentity()
    const writer = setup({ clock, identity, l2 })
    const { key } = generateApiKey()
    identity.answer(key, valid('key_1', ['users:list']))
    await writer.verifier.verify(key)
    t.equal(l2.entries.size, 1, 'a replica wrote L2')

    // This replica's L2 read is slow; the eviction runs (and ends) meanwhile.
    const readGate = deferred()
    const slowL2: KeyCacheL2 = { ...l2, read: async (cacheKey) => { const entry = await l2.read(cacheKey); await readGate.promise; return entry } }
    const reader = setup({ clock, identity, l2: slowL2 })
    const inFlight = reader.verifier.verify(key)
    await settle()
    await reader.verifier.evict('key_1')
    identity.answer(key, valid('key_1', ['tasks:list']))
    readGate.resolve()
    t.match(await inFlight, { valid: true, key: { permissions: ['tasks:list'] } }, 'the stale L2 entry was dropped: identity\'s new permissions')
    t.equal(identity.calls, 2, 'identity asked')
  })

  await t.test('an L2 entry read while the eviction\'s deletes run is not trusted, nor is the verdict cached', async (t) => {
    const { clock, l2, identity, key } = await verifiedThroughL2()

    const evictGate = deferred()
    const slow: KeyCacheL2 = { ...l2, evict: async (keyId, written) => { await evictGate.promise; await l2.evict(keyId, written) } }
    const replica = setup({ clock, identity, l2: slow })
    const eviction = replica.verifier.evict('key_1')
    identity.answer(key, valid('key_1', ['tasks:list']))
    // L2 still holds the old entry: the deletes have not run yet.
    t.match(await replica.verifier.verify(key), { valid: true, key: { permissions: ['tasks:list'] } }, 'during the eviction: identity\'s answer, not L2\'s')
    evictGate.resolve()
    await eviction
    t.equal(l2.entries.size, 0, 'the eviction cleared L2, and the verification did not write it back')
    await replica.verifier.verify(key)
    t.equal(identity.calls, 3, 'after the eviction: identity asked again (the verdict during it was not kept in L1)')
  })

  await t.test('an L2 read that began while the eviction\'s deletes ran, and ends after them, is not trusted', async (t) => {
    const { clock, l2, identity, key } = await verifiedThroughL2()

    const evictGate = deferred()
    const readGate = deferred()
    const slow: KeyCacheL2 = {
      ...l2,
      read: async (cacheKey) => { const entry = await l2.read(cacheKey); await readGate.promise; return entry },
      evict: async (keyId, written) => { await evictGate.promise; await l2.evict(keyId, written) }
    }
    const replica = setup({ clock, identity, l2: slow })
    const eviction = replica.verifier.evict('key_1')
    const inFlight = replica.verifier.verify(key)
    await settle()
    evictGate.resolve()
    await eviction
    identity.answer(key, valid('key_1', ['tasks:list']))
    readGate.resolve()
    t.match(await inFlight, { valid: true, key: { permissions: ['tasks:list'] } }, 'the entry it read before the delete is dropped: identity\'s answer')
  })

  await t.test('an eviction heard while L2 is written undoes that write', async (t) => {
    const clock = fakeClock()
    const l2 = memoryL2(clock.now)
    const writeGate = deferred()
    let current: boolean | null = null
    const slow: KeyCacheL2 = {
      ...l2,
      write: async (cacheKey, entry, stillCurrent) => {
        await writeGate.promise
        current = stillCurrent()
        await l2.write(cacheKey, entry, stillCurrent)
      }
    }
    const { identity, verifier } = setup({ clock, l2: slow })
    const { key } = generateApiKey()
    identity.answer(key, valid('key_1', ['users:list']))
    const inFlight = verifier.verify(key)
    await settle()
    await verifier.evict('key_1')
    writeGate.resolve()
    t.ok((await inFlight).valid, 'the request in flight: valid')
    t.equal(current, false, 'L2 is told the verification is no longer current')
    t.equal(l2.entries.size, 0, 'so no entry is left in L2')
    await verifier.verify(key)
    t.equal(identity.calls, 2, 'and L1 forgot it: identity asked again')
  })
})
