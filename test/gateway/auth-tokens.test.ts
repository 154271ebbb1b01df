import t from 'tap'
import { createPublicKey } from 'node:crypto'
import { generateKeyPair, type JWTPayload } from 'jose'
import { assertJson, assertStatus } from '../helpers/assert.js'
import { startStack } from '../helpers/gateway.js'
import { claimsOf } from '../helpers/session-setup.js'
import {
  JWKS_PATH, assertRefused, getWithHeaders, pollUntil, readIdentitySigningKey, signToken, strangerSigner
} from '../helpers/gateway-auth.js'

/**
 * Access tokens at the gateway:
 * every forged, altered, misused or dead token is a 401 `invalid_token` with RFC
 * 6750's challenge. The forgeries that matter most are signed with identity's real
 * private key, read from its database, with exactly one thing wrong: a control
 * token forged the same way with nothing wrong is accepted, so each refusal is the
 * rule under test and not the forging.
 */

const b64 = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString('base64url')
const nowSeconds = (now: number): number => Math.floor(now / 1000)

t.test('access tokens at the gateway', async (t) => {
  const s = await startStack(t)
  const { gateway } = s
  const tokens = await s.login()
  assertJson(t, await gateway.call('/users', { bearer: tokens.access_token }), 200, 'control: the token identity issued')
  const signer = await readIdentitySigningKey(s.databasePath)
  const claims = claimsOf(tokens.access_token) as JWTPayload & Record<string, unknown>
  const now = nowSeconds(s.clock.now())
  const without = (name: string): JWTPayload => Object.fromEntries(Object.entries(claims).filter(([k]) => k !== name))

  const control = await signToken(signer, { ...claims, jti: 'forged-control' })
  assertJson(t, await gateway.call('/users', { bearer: control }), 200, 'control: a token forged with identity\'s key and nothing wrong is accepted')
  assertJson(t, await gateway.call('/users', { bearer: await signToken(signer, claims, { typ: 'application/at+jwt' }) }), 200,
    'control: typ application/at+jwt is accepted too (RFC 9068 §4)')

  await t.test('forged, altered and misused tokens: 401 invalid_token', async (t) => {
    const jwk = ((await gateway.call(JWKS_PATH)).body.keys as Array<Record<string, string>>).find((k) => k.kid === signer.kid)
    t.ok(jwk !== undefined, 'identity publishes its signing key')
    const publicPem = createPublicKey({ key: jwk as Record<string, string>, format: 'jwk' }).export({ type: 'spki', format: 'pem' }).toString()
    const hs256 = async (secret: string | Buffer): Promise<string> =>
      await signToken({ kid: signer.kid, alg: 'HS256', key: new Uint8Array(Buffer.from(secret)) }, claims)
    const [head, payload, signature] = tokens.access_token.split('.') as [string, string, string]
    const es256 = await generateKeyPair('ES256')
    const stranger = await strangerSigner()

    const attacks: Array<[string, string]> = [
      ['alg none, no signature', `${b64({ alg: 'none', typ: 'at+jwt', kid: signer.kid })}.${payload}.`],
      ['alg none, the real signature kept', `${b64({ alg: 'none', typ: 'at+jwt', kid: signer.kid })}.${payload}.${signature}`],
      ['HS256 keyed with the public key\'s raw bytes', await hs256(Buffer.from(jwk?.x ?? '', 'base64url'))],
      ['HS256 keyed with the public JWK as JSON', await hs256(JSON.stringify(jwk))],
      ['HS256 keyed with the public key as PEM', await hs256(publicPem)],
      ['ES256 under identity\'s EdDSA kid', await signToken({ kid: signer.kid, alg: 'ES256', key: es256.privateKey }, claims)],
      ['typ JWT instead of at+jwt', await signToken(signer, claims, { typ: 'JWT' })],
      ['no typ', await signToken(signer, claims, { typ: undefined })],
      ['no kid', await signToken(signer, claims, { kid: undefined })],
      ['a kid identity never published', await signToken(stranger, claims)],
      ['the signer\'s own key embedded as a jwk header', await signToken(stranger, claims, { kid: undefined, jwk: stranger.publicJwk })],
      ['the signer\'s key named by a jku header', await signToken(stranger, claims, { kid: undefined, jku: 'https://attacker.example/jwks.json' })],
      ['another issuer', await signToken(signer, { ...claims, iss: 'https://attacker.example' })],
      ['another audience', await signToken(signer, { ...claims, aud: 'another-api' })],
      ['an audience list without ours', await signToken(signer, { ...claims, aud: ['another-api', 'a-third-api'] })],
      ['nbf five minutes ahead', await signToken(signer, { ...claims, nbf: now + 300 })],
      ['no sid', await signToken(signer, without('sid'))],
      ['no sub', await signToken(signer, without('sub'))],
      ['no exp', await signToken(signer, without('exp'))],
      ['no jti', await signToken(signer, without('jti'))],
      ['permissions not a list', await signToken(signer, { ...claims, permissions: '*' })],
      ['expired ten minutes ago', await signToken(signer, { ...claims, iat: now - 1_200, exp: now - 600 })],
      ['payload changed (permissions *), signature kept', `${head}.${b64({ ...claims, permissions: ['*'] })}.${signature}`],
      ['payload changed (another sub), signature kept', `${head}.${b64({ ...claims, sub: 'usr_someone_else' })}.${signature}`],
      ['header changed (typ), signature kept', `${b64({ ...JSON.parse(Buffer.from(head, 'base64url').toString()), typ: 'JWT' })}.${payload}.${signature}`],
      ['signature removed', `${head}.${payload}.`],
      ['signature of another token', `${head}.${payload}.${control.split('.')[2] ?? ''}`],
      ['the refresh token', tokens.refresh_token]
    ]
    const identityCalls = s.logs.length
    for (const [label, token] of attacks) {
      const answer = await gateway.call('/users', { bearer: token })
      assertRefused(t, answer, 'invalid_token', label)
      t.notOk(answer.text.includes(token), `${label}: the answer does not echo the token`)
    }
    t.same(s.logs.slice(identityCalls).filter((l) => l.msg === 'request').map((l) => l.url), [],
      'no request reached identity: tokens are verified locally, and unknown kids are within the JWKS cooldown')
    assertJson(t, await gateway.call('/users', { bearer: tokens.access_token }), 200, 'control: the real token still works')
  })

  await t.test('Authorization syntax: anything but one Bearer token is 401 invalid_token', async (t) => {
    const cases: Array<[string, string]> = [
      ['Bearer with no token', 'Bearer '],
      ['Bearer alone', 'Bearer'],
      ['two words after Bearer', 'Bearer a b'],
      ['the Basic scheme', 'Basic dXNlcjpwYXNz'],
      ['two Bearer credentials in one header', `Bearer ${tokens.access_token}, Bearer ${tokens.access_token}`],
      ['a token with a space before it', `Bearer  ${tokens.access_token}`],
      ['a token after a comma', `Bearer ,${tokens.access_token}`],
      ['a token longer than any identity issues', `Bearer ${'a'.repeat(9_000)}`]
    ]
    for (const [label, authorization] of cases) {
      const answer = await getWithHeaders(`${gateway.url}/users`, { authorization })
      assertRefused(t, answer, 'invalid_token', label)
    }
    assertJson(t, await getWithHeaders(`${gateway.url}/users`, { authorization: `bearer ${tokens.access_token}` }), 200,
      'control: the scheme is case-insensitive (RFC 9110 §11.1)')
  })

  await t.test('a token of a revoked session', async (t) => {
    const other = await s.login()
    assertJson(t, await gateway.call('/users', { bearer: other.access_token }), 200, 'accepted before')
    assertStatus(t, await s.admin('DELETE', `/admin/sessions/${other.sid}`), 200, 'session revoked')
    t.not(await pollUntil(async () => (await gateway.call('/users', { bearer: other.access_token })).status !== 200), null, 'refused soon after')
    const answer = await gateway.call('/users', { bearer: other.access_token })
    assertRefused(t, answer, 'invalid_token', 'the revoked session\'s token')
    t.match(answer.body.detail, /revoked/, 'the detail says revoked')
  })

  await t.test('a real token 601 s after it was issued', async (t) => {
    const unused = await s.login()
    s.clock.advance(601_000)
    for (const [label, token] of [['a token verified before (cached)', tokens.access_token], ['a token never presented before', unused.access_token]]) {
      const answer = await gateway.call('/users', { bearer: token as string })
      assertRefused(t, answer, 'invalid_token', label as string)
      t.match(answer.body.detail, /expired/, `${label as string}: the detail says expired`)
    }
    assertJson(t, await gateway.call('/users', { bearer: (await s.login()).access_token }), 200, 'control: a new token works')
  })
})
