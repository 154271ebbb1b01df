import t from 'tap'
import type { Test } from 'tap'
import { randomBase62 } from '../../common/random.js'
import { assertJson, assertStatus } from '../helpers/assert.js'
import { startStack } from '../helpers/gateway.js'
import { http, type HttpAnswer } from '../helpers/http.js'
import { watchForLeaks } from '../helpers/leak-watch.js'
import { ADA, claimsOf } from '../helpers/session-setup.js'
import {
  INVALID_TOKEN_CHALLENGE, JWKS_PATH, gatewayWitness, identityRequests, signToken, strangerSigner
} from '../helpers/gateway-auth.js'

/**
 * Issue 6, token attacks that take many requests (the single-request ones are in
 * token-attacks.test.ts), through the gateway over real sockets:
 * - a flood of tokens with random unknown `kid`s costs identity at most one JWKS
 *   fetch per cooldown, not one per request (every token still 401, upstream never
 *   reached);
 * - login with an unknown e-mail takes as long as with a wrong password (ratio of
 *   medians within 0.8–1.25), so timing does not tell which e-mails are registered.
 */

const COOLDOWN_SECONDS = 30
const FLOOD = 200
/**
 * Login timing is sampled in interleaved A B B A rounds (two samples per kind each),
 * after a few warm-up rounds, until the ratio of medians is known to about ±10 %
 * (95 %): on a quiet machine the minimum is enough; on a loaded one sampling goes on,
 * within a count and a time cap. When to stop depends on the spread only, never on
 * the ratio itself.
 */
const TIMING = { warmupRounds: 3, minRounds: 25, maxRounds: 120, budgetMs: 20_000, precision: 0.1 }
const RATIO_BOUNDS = [0.8, 1.25] as const

/** What Prometheus sends to identity's /metrics (it is not JSON). */
const PROMETHEUS_ACCEPT = 'text/plain;version=0.0.4;q=0.5,*/*;q=0.1'

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[middle] as number : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2
}

/** Standard error of the median of `values`, relative to it: from the median absolute deviation, normal approximation. */
function relativeMedianError (values: number[]): number {
  const middle = median(values)
  const mad = median(values.map((v) => Math.abs(v - middle)))
  return 1.2533 * 1.4826 * mad / (middle * Math.sqrt(values.length))
}

t.test('token floods and login timing through the gateway', async (t) => {
  const leaks = watchForLeaks()
  // The throttle stays on (both login paths run its code) but never answers 429 here.
  const s = await startStack(t, { env: { IDENTITY_LOGIN_MAX_FAILURES_PER_EMAIL: '1000000', IDENTITY_LOGIN_MAX_FAILURES_PER_IP: '1000000' } })
  leaks.source({ name: 'gateway', text: s.gateway.logText })
  leaks.source({ name: 'identity', text: s.logText })
  leaks.secret(ADA.password, s.adminToken, s.serviceToken)

  await t.test('login timing: an unknown e-mail vs a wrong password (ratio of medians within 0.8–1.25)', async (t) => {
    t.ok(s.config.loginThrottle.enabled, 'the login throttle is on, its limits raised so that no attempt is short-cut by a 429')
    const wrongPassword = 'not the password of anyone here'
    leaks.secret(wrongPassword)
    const kinds = {
      unknownEmail: { email: 'nobody-registered@example.com', password: wrongPassword },
      wrongPassword: { email: ADA.email, password: wrongPassword }
    }
    const argon2Before = await argon2Verifications(t)
    const answers: HttpAnswer[] = []
    const attempt = async (kind: keyof typeof kinds): Promise<number> => {
      const started = performance.now()
      const answer = await s.gateway.call('/sessions', { body: { session: kinds[kind] } })
      const ms = performance.now() - started
      answers.push(answer)
      return ms
    }
    const samples: Record<keyof typeof kinds, number[]> = { unknownEmail: [], wrongPassword: [] }
    /** Half-width of the ratio's 95 % interval, relative to it. */
    const uncertainty = (): number => 1.96 * Math.hypot(relativeMedianError(samples.unknownEmail), relativeMedianError(samples.wrongPassword))
    const samplingStarted = performance.now()
    let rounds = 0
    const more = (): boolean => rounds < TIMING.warmupRounds + TIMING.minRounds ||
      (uncertainty() > TIMING.precision && rounds < TIMING.warmupRounds + TIMING.maxRounds && performance.now() - samplingStarted < TIMING.budgetMs)
    for (; more(); rounds++) {
      // A B B A: a drift in machine load weighs on both kinds alike.
      for (const kind of ['unknownEmail', 'wrongPassword', 'wrongPassword', 'unknownEmail'] as const) {
        const ms = await attempt(kind)
        if (rounds >= TIMING.warmupRounds) samples[kind].push(ms)
      }
    }
    t.same(answers.map((a) => [a.status, a.body?.code]), Array(answers.length).fill([401, 'invalid_credentials']),
      `all ${answers.length} attempts: 401 invalid_credentials, none throttled`)
    t.equal(new Set(answers.map((a) => a.text)).size, 1, 'every answer has the same body')
    const argon2After = await argon2Verifications(t)
    const perKind = 2 * rounds
    t.same({ dummy: argon2After.dummy - argon2Before.dummy, password: argon2After.password - argon2Before.password },
      { dummy: perKind, password: perKind }, 'each attempt ran one argon2 verification: against the dummy hash, or the user\'s')

    const unknown = median(samples.unknownEmail)
    const wrong = median(samples.wrongPassword)
    const ratio = unknown / wrong
    t.comment(`login timing (n=${samples.unknownEmail.length} each, through the gateway): median unknown e-mail ${unknown.toFixed(1)} ms, ` +
      `wrong password ${wrong.toFixed(1)} ms, ratio ${ratio.toFixed(3)} (±${(100 * uncertainty()).toFixed(0)} %, 95 %)`)
    t.ok(ratio >= RATIO_BOUNDS[0] && ratio <= RATIO_BOUNDS[1], `ratio of medians ${ratio.toFixed(3)} is within ${RATIO_BOUNDS.join('–')}`)
  })

  /** identity's argon2 verifications so far, against the dummy hash and against users' hashes. */
  async function argon2Verifications (t: Test): Promise<{ dummy: number, password: number }> {
    const answer = await http(`${s.adminUrl}/metrics`, { bearer: s.serviceToken, headers: { accept: PROMETHEUS_ACCEPT } })
    assertStatus(t, answer, 200, 'identity metrics')
    const count = (purpose: string): number => answer.text.split('\n')
      .filter((l) => l.startsWith('portier_identity_argon2_operations_total{') && l.includes('operation="verify"') && l.includes(`purpose="${purpose}"`))
      .reduce((sum, l) => sum + Number(l.slice(l.lastIndexOf(' ') + 1)), 0)
    return { dummy: count('dummy'), password: count('password') }
  }

  await t.test(`a flood of random unknown kids: at most one JWKS fetch per ${COOLDOWN_SECONDS} s cooldown`, async (t) => {
    const fetchesBefore = await identityRequests(s, JWKS_PATH)
    const gateway = await s.addGateway({ jwksCooldownSeconds: COOLDOWN_SECONDS })
    leaks.source({ name: 'flooded gateway', text: gateway.logText })
    let fetches = await identityRequests(s, JWKS_PATH)
    t.equal(fetches, fetchesBefore + 1, 'the gateway loaded the JWKS once at start')

    const login = await gateway.call('/sessions', { body: { session: ADA } })
    assertJson(t, login, 201, 'login through the flooded gateway')
    const tokens = login.body as { access_token: string, refresh_token: string }
    leaks.secret(tokens.access_token, tokens.refresh_token)
    assertJson(t, await gateway.call('/users', { bearer: tokens.access_token }), 200, 'control: a genuine token')
    const claims = claimsOf(tokens.access_token)
    const stranger = await strangerSigner()
    const forge = async (): Promise<string> => await signToken({ ...stranger, kid: randomBase62(43) }, claims)

    /** `count` tokens, each with its own random kid, sent all at once and then one by one: every one refused, none upstream. */
    async function flood (t: Test, label: string, count: number): Promise<void> {
      const seen = await gatewayWitness(gateway)
      const concurrent = await Promise.all(Array.from({ length: count }, forge))
      const sequential = await Promise.all(Array.from({ length: count }, forge))
      leaks.secret(...concurrent, ...sequential)
      const answers = await Promise.all(concurrent.map(async (bearer) => await gateway.call('/users', { bearer })))
      for (const bearer of sequential) answers.push(await gateway.call('/users', { bearer }))
      t.same(answers.map((a) => [a.status, a.headers['content-type'], a.body?.code, a.headers['www-authenticate']]),
        Array(2 * count).fill([401, 'application/problem+json; charset=utf-8', 'invalid_token', INVALID_TOKEN_CHALLENGE]),
        `${label}: ${count} concurrent then ${count} sequential tokens with random kids, all 401 invalid_token with the challenge`)
      t.same(await gatewayWitness(gateway), { upstream: seen.upstream, refused: seen.refused + 2 * count },
        `${label}: all refused by the token check, none reached the upstream`)
    }
    const newFetches = async (): Promise<number> => {
      const now = await identityRequests(s, JWKS_PATH)
      const added = now - fetches
      fetches = now
      return added
    }

    await flood(t, 'within the cooldown of the start-up load', FLOOD)
    t.equal(await newFetches(), 0, 'no JWKS fetch: the start-up load began the cooldown')

    s.clock.advance((COOLDOWN_SECONDS + 1) * 1000)
    await flood(t, `${COOLDOWN_SECONDS + 1} s later`, FLOOD)
    t.equal(await newFetches(), 1, 'one JWKS fetch for the whole flood (caused by the first unknown kid after the cooldown; the others within it wait for it or are refused)')

    s.clock.advance((COOLDOWN_SECONDS + 1) * 1000)
    await flood(t, 'one cooldown later again, a single new unknown kid', 1)
    t.equal(await newFetches(), 1, 'at most one more fetch once the cooldown is over')
    await flood(t, 'and a flood right after it', FLOOD)
    t.equal(await newFetches(), 0, 'no further fetch within that cooldown')
    assertJson(t, await gateway.call('/users', { bearer: tokens.access_token }), 200, 'control: the genuine token still works')
  })

  await t.test('the cooldown does not refuse genuine tokens: concurrent first uses of a new key wait for the one fetch', async (t) => {
    // On a channel of its own, this gateway misses identity's signing_key.rotated event
    // (as while Redis is down): the new kid reaches it first in tokens.
    const gateway = await s.addGateway({ jwksCooldownSeconds: COOLDOWN_SECONDS, eventsChannel: `${s.config.eventsChannel}:deaf` })
    leaks.source({ name: 'deaf gateway', text: gateway.logText })
    s.clock.advance((COOLDOWN_SECONDS + 1) * 1000)
    assertStatus(t, await s.admin('POST', '/admin/signing-keys/rotate'), 200, 'signing key rotated')
    const login = await s.gateway.call('/sessions', { body: { session: ADA } })
    assertJson(t, login, 201, 'a login after the rotation: its token names the new kid')
    const fresh = login.body as { access_token: string, refresh_token: string }
    leaks.secret(fresh.access_token, fresh.refresh_token)
    const fetches = await identityRequests(s, JWKS_PATH)
    const answers = await Promise.all(Array.from({ length: 20 }, async () => await gateway.call('/users', { bearer: fresh.access_token })))
    t.same(answers.map((a) => a.status), Array(20).fill(200), '20 concurrent requests with a token of the new key: all 200')
    t.equal(await identityRequests(s, JWKS_PATH), fetches + 1, 'one JWKS fetch served them all')
  })

  await leaks.assertNoLeaks(t)
})
