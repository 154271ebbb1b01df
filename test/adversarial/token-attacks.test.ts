import t from 'tap'
import type { Test } from 'tap'
import { createPublicKey } from 'node:crypto'
import { generateKeyPair, type JWK, type JWTPayload } from 'jose'
import { assertJson, assertProblem, assertStatus } from '../helpers/assert.js'
import { startStack } from '../helpers/gateway.js'
import { http, type HttpAnswer } from '../helpers/http.js'
import { watchForLeaks } from '../helpers/leak-watch.js'
import { ADA, claimsOf, type SessionTokens } from '../helpers/session-setup.js'
import {
  JWKS_PATH, assertRefused, gatewayWitness, pollUntil, readIdentitySigningKey, signToken, strangerSigner
} from '../helpers/gateway-auth.js'

/**
 * Issue 6, token attacks, through the gateway over real sockets: every forged,
 * misused or dead access token sent to a route its user may call (GET /users with
 * the `reader` role) is a 401 problem with RFC 6750's invalid_token challenge, and
 * the upstream never sees the request. The forgeries are signed with identity's
 * real private key (read from its database) with exactly one defect, and a control
 * forged the same way without a defect is accepted, so each refusal is the rule
 * under test. The refresh route (/tokens, /jetons) gets the refresh-token attacks:
 * reuse after rotation revokes the whole session, down to its live access token at
 * the gateway; a refresh token of another session is refused without side effects.
 * The JWKS flood and login timing are in token-attacks-flood-timing.test.ts.
 */

const b64 = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString('base64url')
const REFRESH_PATHS = ['/tokens', '/jetons'] as const
/** Events travel identity → Redis → gateway: a bounded wait, not a speed claim. */
const EVENT_WAIT_MS = 3_000

interface Attack { name: string, bearer: string, detail?: RegExp }

t.test('token attacks through the gateway', async (t) => {
  const leaks = watchForLeaks()
  const s = await startStack(t)
  const { gateway } = s
  leaks.source({ name: 'gateway', text: gateway.logText })
  leaks.source({ name: 'identity', text: s.logText })
  leaks.secret(ADA.password, s.adminToken, s.serviceToken)

  const keep = (tokens: { access_token: string, refresh_token: string }): void => { leaks.secret(tokens.access_token, tokens.refresh_token) }
  /** POST /sessions through the gateway; asserts 201. */
  async function login (t: Test, label: string): Promise<SessionTokens> {
    const answer = await gateway.call('/sessions', { body: { session: ADA } })
    assertJson(t, answer, 201, `${label}: login through the gateway`)
    keep(answer.body)
    return { ...answer.body, sid: claimsOf(answer.body.access_token).sid as string }
  }
  const refresh = async (path: string, bearer: string, refreshToken: string): Promise<HttpAnswer> =>
    await gateway.call(path, { bearer, body: { refresh_token: refreshToken } })
  const users = async (bearer: string): Promise<HttpAnswer> => await gateway.call('/users', { bearer })
  const sessionStatus = async (sid: string): Promise<unknown> => (await s.admin('GET', `/admin/sessions/${sid}`)).body.session?.status
  /** Polls GET /users with `bearer` until the gateway refuses it. */
  const refusedWithin = async (bearer: string): Promise<number | null> =>
    await pollUntil(async () => (await users(bearer)).status === 401, { timeoutMs: EVENT_WAIT_MS, intervalMs: 20 })

  /** The tokens of sessions revoked by the refresh-route attacks: rows of the table below. */
  const revokedByReuse: Attack[] = []

  await t.test('refresh token reused after rotation: 401, the whole session revoked, its live access token refused', async (t) => {
    for (const path of REFRESH_PATHS) {
      const first = await login(t, path)
      const rotated = await refresh(path, first.access_token, first.refresh_token)
      assertJson(t, rotated, 200, `${path}: the first refresh rotates`)
      keep(rotated.body)
      const live = rotated.body as SessionTokens
      assertJson(t, await users(live.access_token), 200, `${path}: the rotated access token works`)

      const reused = await refresh(path, first.access_token, first.refresh_token)
      assertProblem(t, reused, 401, 'refresh_token_reused', `${path}: the rotated-out refresh token again`)
      t.match(reused.headers['www-authenticate'], /^Bearer realm="portier"/, `${path}: the 401 carries a Bearer challenge`)
      t.notOk(reused.text.includes(first.refresh_token), `${path}: the answer does not echo the refresh token`)
      t.equal(await sessionStatus(first.sid), 'revoked', `${path}: identity revoked the whole session`)

      const waited = await refusedWithin(live.access_token)
      t.not(waited, null, `${path}: the gateway refuses the session's live access token within ${EVENT_WAIT_MS} ms (${String(waited)} ms)`)
      const newest = await refresh(path, live.access_token, live.refresh_token)
      assertProblem(t, newest, 401, 'session_revoked', `${path}: the newest refresh token of the revoked session`)
      revokedByReuse.push(
        { name: `${path}: the live access token of a session revoked by refresh-token reuse`, bearer: live.access_token, detail: /revoked/ },
        { name: `${path}: the first access token of that session`, bearer: first.access_token, detail: /revoked/ })
    }
  })

  await t.test('a refresh token of session A with the Bearer of session B: 401, and neither session is damaged', async (t) => {
    const a = await login(t, 'session A')
    const b = await login(t, 'session B')
    for (const [path, bearer, refreshToken, label] of [
      ['/tokens', b.access_token, a.refresh_token, 'A\'s refresh token, B\'s Bearer'],
      ['/jetons', a.access_token, b.refresh_token, 'B\'s refresh token, A\'s Bearer']
    ] as const) {
      const answer = await refresh(path, bearer, refreshToken)
      assertProblem(t, answer, 401, 'refresh_token_invalid', `${path}: ${label}`)
      t.match(answer.headers['www-authenticate'], /^Bearer realm="portier"/, `${path}: ${label}: a Bearer challenge`)
    }
    for (const [name, session] of [['A', a], ['B', b]] as const) {
      t.equal(await sessionStatus(session.sid), 'active', `session ${name} is still active`)
      const again = await refresh('/tokens', session.access_token, session.refresh_token)
      assertJson(t, again, 200, `session ${name} still refreshes with its own tokens (its refresh token was not consumed)`)
      keep(again.body)
      assertJson(t, await users(again.body.access_token), 200, `session ${name}: its new access token works`)
    }
  })

  await t.test('a genuine refresh token with a forged Bearer for its session: 401 invalid_token, the session undamaged', async (t) => {
    const victim = await login(t, 'victim')
    const claims = claimsOf(victim.access_token)
    const stranger = await strangerSigner()
    const [, payload] = victim.access_token.split('.') as [string, string]
    const forgeries: Array<[string, string]> = [
      ['signed by another key', await signToken(stranger, claims)],
      ['alg none', `${b64({ alg: 'none', typ: 'at+jwt' })}.${payload}.`]
    ]
    for (const [label, bearer] of forgeries) {
      leaks.secret(bearer)
      for (const path of REFRESH_PATHS) assertRefused(t, await refresh(path, bearer, victim.refresh_token), 'invalid_token', `${path}: ${label}`)
    }
    t.equal(await sessionStatus(victim.sid), 'active', 'the victim\'s session is still active')
    const own = await refresh('/tokens', victim.access_token, victim.refresh_token)
    assertJson(t, own, 200, 'and its refresh token still works for its owner')
    keep(own.body)
  })

  await t.test('every attack on GET /users: 401 invalid_token, problem+json, RFC 6750 challenge, upstream never reached', async (t) => {
    const tokens = await login(t, 'attacker\'s own session')
    const claims = claimsOf(tokens.access_token) as JWTPayload & Record<string, unknown>
    const now = Math.floor(s.clock.now() / 1000)
    const signer = await readIdentitySigningKey(s.databasePath)
    const published = await http(`${s.publicUrl}${JWKS_PATH}`)
    const jwk = (published.body.keys as JWK[]).find((k) => k.kid === signer.kid)
    t.ok(jwk !== undefined, 'identity publishes the key the forgeries are signed with')
    const publicJwkJson = JSON.stringify(jwk)
    const publicPem = createPublicKey({ key: jwk as Record<string, string>, format: 'jwk' }).export({ type: 'spki', format: 'pem' }).toString()
    const hs256 = async (secret: string | Buffer): Promise<string> =>
      await signToken({ kid: signer.kid, alg: 'HS256', key: new Uint8Array(Buffer.from(secret)) }, claims)
    const [head, payload, signature] = tokens.access_token.split('.') as [string, string, string]
    const stranger = await strangerSigner()
    const es256 = await generateKeyPair('ES256')

    const control = await signToken(signer, { ...claims, jti: 'forged-control' })
    leaks.secret(control)
    const before = await gatewayWitness(gateway)
    assertJson(t, await users(control), 200, 'control: a token forged with identity\'s key and nothing wrong is accepted')
    t.equal((await gatewayWitness(gateway)).upstream, before.upstream + 1, 'control: the upstream counter sees the accepted request')

    const other = await login(t, 'another live session')
    const revoked = await login(t, 'revoked by an admin')
    assertJson(t, await users(revoked.access_token), 200, 'the soon-revoked session\'s token works before')
    assertStatus(t, await s.admin('DELETE', `/admin/sessions/${revoked.sid}`), 200, 'an admin revokes the session')
    t.not(await refusedWithin(revoked.access_token), null, 'the gateway applies the revocation')
    const loggedOut = await login(t, 'logged out')
    assertStatus(t, await gateway.call('/sessions/current', { method: 'DELETE', bearer: loggedOut.access_token }), 204, 'logout through the gateway')
    t.not(await refusedWithin(loggedOut.access_token), null, 'the gateway applies the logout')

    const attacks: Attack[] = [
      { name: 'alg none, no signature', bearer: `${b64({ alg: 'none', typ: 'at+jwt', kid: signer.kid })}.${payload}.` },
      { name: 'alg none, the real signature kept', bearer: `${b64({ alg: 'none', typ: 'at+jwt', kid: signer.kid })}.${payload}.${signature}` },
      { name: 'alg NONE (case variant)', bearer: `${b64({ alg: 'NONE', typ: 'at+jwt', kid: signer.kid })}.${payload}.` },
      { name: 'HS256 keyed with the public key as PEM', bearer: await hs256(publicPem) },
      { name: 'HS256 keyed with the public JWK as JSON', bearer: await hs256(publicJwkJson) },
      { name: 'HS256 keyed with the public key\'s raw bytes', bearer: await hs256(Buffer.from(jwk?.x ?? '', 'base64url')) },
      { name: 'the refresh token as an access token', bearer: tokens.refresh_token },
      { name: 'typ JWT (not an access token)', bearer: await signToken(signer, claims, { typ: 'JWT' }) },
      { name: 'typ rt+jwt (another token type)', bearer: await signToken(signer, claims, { typ: 'rt+jwt' }) },
      { name: 'no typ', bearer: await signToken(signer, claims, { typ: undefined }) },
      { name: 'an unknown kid', bearer: await signToken(stranger, claims) },
      { name: 'another EdDSA key under identity\'s kid', bearer: await signToken({ ...stranger, kid: signer.kid }, claims) },
      { name: 'an ES256 key under identity\'s kid', bearer: await signToken({ kid: signer.kid, alg: 'ES256', key: es256.privateKey }, claims) },
      { name: 'payload tampered (permissions *), signature kept', bearer: `${head}.${b64({ ...claims, permissions: ['*'] })}.${signature}` },
      { name: 'payload tampered (another live session\'s sid), signature kept', bearer: `${head}.${b64({ ...claims, sid: other.sid })}.${signature}` },
      { name: 'payload tampered (exp pushed a day), signature kept', bearer: `${head}.${b64({ ...claims, exp: now + 86_400 })}.${signature}` },
      { name: 'expired ten minutes ago', bearer: await signToken(signer, { ...claims, iat: now - 1_200, exp: now - 600 }), detail: /expired/ },
      { name: 'expired one second ago', bearer: await signToken(signer, { ...claims, iat: now - 601, exp: now - 1 }), detail: /expired/ },
      { name: 'nbf five minutes ahead', bearer: await signToken(signer, { ...claims, nbf: now + 300 }) },
      { name: 'another issuer', bearer: await signToken(signer, { ...claims, iss: 'https://attacker.example' }) },
      { name: 'another audience', bearer: await signToken(signer, { ...claims, aud: 'another-api' }) },
      { name: 'a session revoked by an admin', bearer: revoked.access_token, detail: /revoked/ },
      { name: 'a session ended by logout', bearer: loggedOut.access_token, detail: /revoked/ },
      ...revokedByReuse
    ]
    t.equal(revokedByReuse.length, 4, 'the refresh-reuse rows are in the table')
    const identityLines = s.logs.length
    for (const attack of attacks) await assertAttackRefused(t, attack)
    t.same(s.logs.slice(identityLines).filter((l) => l.msg === 'request').map((l) => l.url), [],
      'no attack reached identity: tokens are verified locally, and the unknown kid falls within the JWKS cooldown of the start-up load')
    assertJson(t, await users(tokens.access_token), 200, 'control: the attacker\'s own genuine token still works')

    // Last, as it moves the clock shared by identity and the gateway past every token's expiry.
    const unused = await login(t, 'a token never presented before it expires')
    s.clock.advance(601_000)
    await assertAttackRefused(t, { name: 'a genuine token replayed 601 s after issue (verified, cached before)', bearer: tokens.access_token, detail: /expired/ })
    await assertAttackRefused(t, { name: 'a genuine token first presented 601 s after issue', bearer: unused.access_token, detail: /expired/ })
  })

  /** One row of the table: 401 invalid_token with the challenge, nothing echoed, refused by the token check, upstream untouched. */
  async function assertAttackRefused (t: Test, attack: Attack): Promise<void> {
    leaks.secret(attack.bearer)
    const seen = await gatewayWitness(gateway)
    const answer = await users(attack.bearer)
    assertRefused(t, answer, 'invalid_token', attack.name)
    if (attack.detail !== undefined) t.match(answer.body.detail, attack.detail, `${attack.name}: the detail says why`)
    t.notOk(answer.text.includes(attack.bearer), `${attack.name}: the answer does not echo the token`)
    t.same(await gatewayWitness(gateway), { upstream: seen.upstream, refused: seen.refused + 1 },
      `${attack.name}: the gateway's token check refused it; the upstream was never reached`)
  }

  await leaks.assertNoLeaks(t)
})
