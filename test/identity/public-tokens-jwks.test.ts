import t, { type Test } from 'tap'
import { createRemoteJWKSet, decodeJwt, decodeProtectedHeader, importJWK, jwtVerify, type JWK } from 'jose'
import { http } from '../helpers/http.js'
import { assertJson, assertStatus } from '../helpers/assert.js'
import { startWithUser as startWithAda } from '../helpers/session-setup.js'

/**
 * Access tokens (RFC 9068 JWTs) and the JWKS that verifies them: header, claims,
 * verification by a third party with only the published keys, public members only,
 * and signing key rotation with the old key published until its tokens expired.
 */

/** Access token lifetime (the contract) plus the clock skew a retired key stays published for. */
const TOKEN_TTL_MS = 600_000
const PUBLISH_SKEW_MS = 60_000

/** Ada holds `reader` (users:read, users:list) and `tasker` (tasks:*). */
async function startWithUser (t: Test, env: Record<string, string> = {}) {
  const s = await startWithAda(t, { env, roles: { reader: ['users:read', 'users:list'], tasker: ['tasks:*'] } })
  const jwks = async () => {
    const answer = await http(`${s.publicUrl}/.well-known/jwks.json`)
    assertStatus(t, answer, 200, 'JWKS')
    return answer.body.keys as Array<Record<string, unknown>>
  }
  return { ...s, jwks }
}

t.test('happy', async (t) => {
  t.test('an EdDSA access token: at+jwt header with kid, and every claim', async (t) => {
    const { login, clock, userId, admin, jwks } = await startWithUser(t)
    const { access_token: token } = await login()
    const header = decodeProtectedHeader(token)
    t.same(Object.keys(header).sort(), ['alg', 'kid', 'typ'])
    t.match(header, { typ: 'at+jwt', alg: 'EdDSA', kid: /^[\w-]{20,}$/ })
    const [key] = await jwks()
    t.equal(header.kid, key?.kid, 'the kid names the published key')

    const claims = decodeJwt(token)
    const sessions = await admin('GET', `/admin/sessions?user_id=${userId}`)
    const nowSeconds = clock.now() / 1000
    t.match(claims, {
      iss: 'portier-identity',
      aud: 'portier-gateway',
      sub: userId,
      sid: sessions.body.sessions[0].id,
      iat: nowSeconds,
      exp: nowSeconds + 600,
      jti: /^\w{16,}$/
    })
    t.equal((claims.exp as number) - (claims.iat as number), 600)
    t.same(claims.permissions, ['tasks:*', 'users:list', 'users:read'], "the union of the user's role permissions")
  })

  t.test('issuer and audience come from the configuration', async (t) => {
    const { login } = await startWithUser(t, { IDENTITY_ISSUER: 'https://id.example.test', IDENTITY_AUDIENCE: 'https://api.example.test' })
    t.match(decodeJwt((await login()).access_token), { iss: 'https://id.example.test', aud: 'https://api.example.test' })
  })

  t.test('every login gets a fresh jti and sid', async (t) => {
    const { login } = await startWithUser(t)
    const a = decodeJwt((await login()).access_token)
    const b = decodeJwt((await login()).access_token)
    t.not(a.jti, b.jti)
    t.not(a.sid, b.sid)
  })

  t.test('a third party verifies the token with the remote JWKS alone (EdDSA pinned)', async (t) => {
    const { login, publicUrl, clock, userId } = await startWithUser(t)
    const { access_token: token } = await login()
    const keySet = createRemoteJWKSet(new URL(`${publicUrl}/.well-known/jwks.json`))
    const { payload, protectedHeader } = await jwtVerify(token, keySet, {
      algorithms: ['EdDSA'],
      issuer: 'portier-identity',
      audience: 'portier-gateway',
      typ: 'at+jwt',
      currentDate: new Date(clock.now())
    })
    t.equal(payload.sub, userId)
    t.equal(protectedHeader.alg, 'EdDSA')
  })

  t.test('the JWKS publishes public members only, with use sig and the alg of each key', async (t) => {
    const { publicUrl } = await startWithUser(t)
    const answer = await http(`${publicUrl}/.well-known/jwks.json`)
    assertJson(t, answer, 200)
    t.equal(answer.headers['cache-control'], 'public, max-age=60')
    t.same(Object.keys(answer.body), ['keys'])
    t.equal(answer.body.keys.length, 1)
    const [key] = answer.body.keys
    t.same(Object.keys(key).sort(), ['alg', 'crv', 'kid', 'kty', 'use', 'x'])
    t.match(key, { kty: 'OKP', crv: 'Ed25519', alg: 'EdDSA', use: 'sig', x: /^[\w-]{43}$/ })
    for (const privateMember of ['d', 'p', 'q', 'dp', 'dq', 'qi', 'k']) t.notOk(privateMember in key, `no "${privateMember}"`)
    t.notMatch(answer.text, /PRIVATE|pkcs8|"d"/i)
  })

  t.test('with IDENTITY_SIGNING_ALG=ES256, tokens are ES256 and the JWKS carries a P-256 public key', async (t) => {
    const { login, jwks, clock } = await startWithUser(t, { IDENTITY_SIGNING_ALG: 'ES256' })
    const { access_token: token } = await login()
    t.match(decodeProtectedHeader(token), { typ: 'at+jwt', alg: 'ES256', kid: String })
    const keys = await jwks()
    t.equal(keys.length, 1)
    const [key] = keys as [JWK]
    t.same(Object.keys(key).sort(), ['alg', 'crv', 'kid', 'kty', 'use', 'x', 'y'])
    t.match(key, { kty: 'EC', crv: 'P-256', alg: 'ES256', use: 'sig' })
    t.notOk('d' in key)
    t.equal(key.kid, decodeProtectedHeader(token).kid)
    const publicKey = await importJWK(key, 'ES256')
    const { payload } = await jwtVerify(token, publicKey, {
      algorithms: ['ES256'], issuer: 'portier-identity', audience: 'portier-gateway', typ: 'at+jwt', currentDate: new Date(clock.now())
    })
    t.equal((payload.exp as number) - (payload.iat as number), 600)
    t.same(payload.permissions, ['tasks:*', 'users:list', 'users:read'])
  })

  t.test('ES256 tokens are accepted for refresh', async (t) => {
    const { login, refresh } = await startWithUser(t, { IDENTITY_SIGNING_ALG: 'ES256' })
    const first = await login()
    const refreshed = await refresh(first)
    assertStatus(t, refreshed, 200)
    t.equal(decodeProtectedHeader(refreshed.body.access_token).alg, 'ES256')
  })
})

t.test('signing key rotation', async (t) => {
  const { login, refresh, jwks, admin, clock, publicUrl } = await startWithUser(t)
  const beforeRotation = await login()
  const spare = await login() // a session whose refresh token is still unused when the old key leaves the JWKS
  const oldKid = decodeProtectedHeader(beforeRotation.access_token).kid as string

  const rotated = await admin('POST', '/admin/signing-keys/rotate')
  assertStatus(t, rotated, 200)
  t.match(rotated.body, { signing_key: { kid: String, alg: 'EdDSA', status: 'active', retired_at: null, publish_until: null } })
  const newKid = rotated.body.signing_key.kid as string
  t.not(newKid, oldKid)

  t.test('new tokens use the new kid at once', async (t) => {
    const after = await login()
    t.equal(decodeProtectedHeader(after.access_token).kid, newKid)
  })

  t.test('the JWKS publishes the new and the old key; the old one is listed with its publish_until', async (t) => {
    t.same((await jwks()).map((k) => k.kid).sort(), [newKid, oldKid].sort())
    const listed = await admin('GET', '/admin/signing-keys')
    const old = listed.body.signing_keys.find((k: { kid: string }) => k.kid === oldKid)
    t.match(old, {
      kid: oldKid,
      status: 'published',
      retired_at: new Date(clock.now()).toISOString(),
      publish_until: new Date(clock.now() + TOKEN_TTL_MS + PUBLISH_SKEW_MS).toISOString()
    })
  })

  t.test('a token signed by the old key still verifies against the JWKS and is accepted for refresh', async (t) => {
    const keySet = createRemoteJWKSet(new URL(`${publicUrl}/.well-known/jwks.json`))
    const { protectedHeader } = await jwtVerify(beforeRotation.access_token, keySet, {
      algorithms: ['EdDSA'], issuer: 'portier-identity', audience: 'portier-gateway', typ: 'at+jwt', currentDate: new Date(clock.now())
    })
    t.equal(protectedHeader.kid, oldKid)
    const refreshed = await refresh(beforeRotation)
    assertStatus(t, refreshed, 200)
    t.equal(decodeProtectedHeader(refreshed.body.access_token).kid, newKid, 'the refreshed token is signed by the new key')
  })

  t.test('the old key stays published while its tokens may be alive, then leaves the JWKS', async (t) => {
    clock.advance(TOKEN_TTL_MS - 1_000)
    t.same((await jwks()).map((k) => k.kid).sort(), [newKid, oldKid].sort(), 'tokens signed just before rotation are alive')
    clock.advance(1_000 + PUBLISH_SKEW_MS - 1_000)
    t.same((await jwks()).map((k) => k.kid).sort(), [newKid, oldKid].sort(), 'still within the clock-skew margin')
    clock.advance(2_000)
    t.same((await jwks()).map((k) => k.kid), [newKid], 'gone once every token it signed has expired (plus skew)')
    const listed = await admin('GET', '/admin/signing-keys')
    t.match(listed.body.signing_keys.find((k: { kid: string }) => k.kid === oldKid), { status: 'retired' })
  })

  t.test('an expired old-key token is still tolerated for refresh after the key left the JWKS', async (t) => {
    const refreshed = await refresh(spare, '/jetons')
    assertStatus(t, refreshed, 200)
    t.equal(decodeProtectedHeader(refreshed.body.access_token).kid, newKid)
  })
})
