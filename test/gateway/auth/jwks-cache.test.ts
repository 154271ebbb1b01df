import t from 'tap'
import type { Test } from 'tap'
import { exportJWK, generateKeyPair, type JSONWebKeySet, type JWK } from 'jose'
import { createJwksCache } from '../../../gateway/auth/jwks-cache.js'
import { deferred, fakeClock, settle, silentLog, type Deferred } from '../../helpers/auth-caches.js'

/**
 * Identity's signing keys as the gateway holds them: a token naming an unknown `kid`
 * makes the gateway fetch the JWKS again at most once per cooldown, however many such
 * tokens arrive; a fetch already under way is waited for; the keys held survive a
 * failed fetch.
 */

const COOLDOWN_MS = 30_000

async function publicJwk (kid: string, alg: 'EdDSA' | 'ES256' = 'EdDSA'): Promise<JWK> {
  const { publicKey } = await generateKeyPair(alg)
  return { ...await exportJWK(publicKey), kid, alg }
}

interface FakeIdentity {
  jwks: () => Promise<JSONWebKeySet>
  published: JWK[]
  fetches: number
  down: boolean
  /** When set, the next fetch waits for it. */
  hold: Deferred<void> | null
}

function fakeIdentity (published: JWK[]): FakeIdentity {
  const identity: FakeIdentity = {
    published,
    fetches: 0,
    down: false,
    hold: null,
    async jwks () {
      identity.fetches++
      if (identity.hold !== null) await identity.hold.promise
      if (identity.down) throw new Error('identity is down')
      return { keys: identity.published }
    }
  }
  return identity
}

async function setup (t: Test) {
  const clock = fakeClock()
  const identity = fakeIdentity([await publicJwk('kid_1')])
  const jwks = createJwksCache({ identity, cooldownMs: COOLDOWN_MS, log: silentLog, now: clock.now })
  t.notOk(jwks.loaded, 'nothing loaded before the first fetch')
  await jwks.refresh()
  t.ok(jwks.loaded, 'loaded')
  return { clock, identity, jwks }
}

const unknownKid = (n: number): { kid: string, alg: string } => ({ kid: `forged_${n}`, alg: 'EdDSA' })

t.test('an unknown kid: one fetch per cooldown, however many tokens', async (t) => {
  const { clock, identity, jwks } = await setup(t)
  t.ok(await jwks.resolve({ kid: 'kid_1', alg: 'EdDSA' }), 'a known kid resolves')
  t.equal(identity.fetches, 1, 'without a fetch')

  await t.rejects(jwks.resolve(unknownKid(0)), /unknown key/, 'an unknown kid within the cooldown of the first fetch: refused')
  t.equal(identity.fetches, 1, 'without a fetch')

  clock.advance(COOLDOWN_MS - 1)
  await t.rejects(jwks.resolve(unknownKid(1)), /unknown key/, 'a millisecond before the cooldown ends: refused')
  t.equal(identity.fetches, 1, 'without a fetch')

  clock.advance(1)
  const flood = await Promise.allSettled(Array.from({ length: 50 }, async (_, n) => await jwks.resolve(unknownKid(n))))
  t.ok(flood.every((r) => r.status === 'rejected'), '50 unknown kids once the cooldown ended: all refused')
  t.equal(identity.fetches, 2, 'one fetch for all of them')
  await t.rejects(jwks.resolve(unknownKid(99)), /unknown key/, 'right after: refused')
  t.equal(identity.fetches, 2, 'the fetch started a new cooldown')
})

t.test('a rotation: the new kid is fetched once the cooldown allows it, and the retired one still resolves', async (t) => {
  const { clock, identity, jwks } = await setup(t)
  identity.published = [...identity.published, await publicJwk('kid_2')]
  clock.advance(COOLDOWN_MS)
  t.ok(await jwks.resolve({ kid: 'kid_2', alg: 'EdDSA' }), 'the new kid resolves')
  t.equal(identity.fetches, 2, 'after one fetch')
  t.ok(await jwks.resolve({ kid: 'kid_1', alg: 'EdDSA' }), 'the retired kid, still published, resolves')
  t.equal(identity.fetches, 2, 'without a fetch')
})

t.test('within the cooldown, a fetch already under way is waited for', async (t) => {
  const { identity, jwks } = await setup(t)
  identity.published = [...identity.published, await publicJwk('kid_2')]
  identity.hold = deferred()
  // The signing_key.rotated event's fetch.
  const refreshing = jwks.refresh()
  await settle()
  const resolving = jwks.resolve({ kid: 'kid_2', alg: 'EdDSA' })
  identity.hold.resolve()
  t.ok(await resolving, 'the new kid resolves once that fetch lands')
  await refreshing
  t.equal(identity.fetches, 2, 'no fetch of its own')
})

t.test('a failed fetch keeps the keys held', async (t) => {
  const { clock, identity, jwks } = await setup(t)
  identity.down = true
  clock.advance(COOLDOWN_MS)
  await t.rejects(jwks.resolve(unknownKid(0)), /unknown key/, 'an unknown kid with identity down: refused, not an error of the fetch')
  t.equal(identity.fetches, 2, 'the fetch was tried')
  t.ok(await jwks.resolve({ kid: 'kid_1', alg: 'EdDSA' }), 'the known kid still resolves')
  await t.rejects(jwks.resolve(unknownKid(1)), /unknown key/, 'another unknown kid right after')
  t.equal(identity.fetches, 2, 'a failed fetch starts the cooldown too')
})

t.test('keys are pinned to their published algorithm; keys that cannot be pinned are ignored', async (t) => {
  const { clock, identity, jwks } = await setup(t)
  await t.rejects(jwks.resolve({ kid: 'kid_1', alg: 'ES256' }), /does not match/, 'a token naming another algorithm for the kid')
  await t.rejects(jwks.resolve({ alg: 'EdDSA' }), /no kid/, 'a token without kid')
  const { alg: _alg, ...withoutAlg } = await publicJwk('kid_no_alg')
  identity.published = [withoutAlg, { ...await publicJwk('kid_hs'), alg: 'HS256' }, await publicJwk('kid_es', 'ES256')]
  clock.advance(COOLDOWN_MS)
  t.ok(await jwks.resolve({ kid: 'kid_es', alg: 'ES256' }), 'an ES256 key resolves')
  clock.advance(COOLDOWN_MS)
  await t.rejects(jwks.resolve({ kid: 'kid_no_alg', alg: 'EdDSA' }), /unknown key/, 'a key published without alg is not trusted')
  clock.advance(COOLDOWN_MS)
  await t.rejects(jwks.resolve({ kid: 'kid_hs', alg: 'HS256' }), /unknown key/, 'nor one of an algorithm identity does not sign with')
})
