import t from 'tap'
import { SignJWT, decodeJwt, decodeProtectedHeader, generateKeyPair, type JWTPayload } from 'jose'
import type { TestIdentity } from '../helpers/identity.js'
import { http, type HttpAnswer } from '../helpers/http.js'
import { assertProblem, assertStatus } from '../helpers/assert.js'
import { ADA, postLogin, startWithUser, type TokenSet } from '../helpers/session-setup.js'

/**
 * The Bearer on identity's protected public routes (POST /tokens, POST /jetons,
 * DELETE /sessions/current): one shared set of forged, tampered, foreign and
 * malformed credentials, each refused with 401 invalid_token and no side effect;
 * the same-session rule between Bearer and refresh token; expiry tolerated on
 * refresh only.
 */

const INVALID_TOKEN_CHALLENGE = /^Bearer realm="portier", error="invalid_token"(, error_description="[^"]*")?$/

const b64json = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString('base64url')
const segments = (token: string) => {
  const [header = '', payload = '', signature = ''] = token.split('.')
  return { header, payload, signature }
}
/** Replaces one character in the middle of a segment (the middle: a last character may only carry padding bits). */
const flipMiddle = (segment: string): string => {
  const i = Math.floor(segment.length / 2)
  return segment.slice(0, i) + (segment[i] === 'A' ? 'B' : 'A') + segment.slice(i + 1)
}

/** Signs `payload` with identity's own active key, for tokens that are well signed but wrong otherwise. */
async function signWithRealKey (identity: TestIdentity, payload: JWTPayload, header: Record<string, unknown> = {}): Promise<string> {
  const { kid, alg, key } = await identity.identity.services.signingKeys.active()
  return await new SignJWT(payload).setProtectedHeader({ alg, kid, typ: 'at+jwt', ...header }).sign(key)
}

type Forge = (real: string, identity: TestIdentity) => Promise<string>

/** Every way a Bearer must fail, built from a real, valid access token of the session under test. */
const FORGED_BEARERS: Array<[name: string, forge: Forge]> = [
  ['a payload character flipped', async (real) => {
    const s = segments(real)
    return `${s.header}.${flipMiddle(s.payload)}.${s.signature}`
  }],
  ['permissions escalated in the payload, signature kept', async (real) => {
    const s = segments(real)
    return `${s.header}.${b64json({ ...decodeJwt(real), permissions: ['*'] })}.${s.signature}`
  }],
  ['a signature character flipped', async (real) => {
    const s = segments(real)
    return `${s.header}.${s.payload}.${flipMiddle(s.signature)}`
  }],
  ['alg "none" with the real kid', async (real) => {
    const kid = decodeProtectedHeader(real).kid ?? ''
    return `${b64json({ alg: 'none', typ: 'at+jwt', kid })}.${segments(real).payload}.`
  }],
  ['the signature stripped (unsigned)', async (real) => {
    const s = segments(real)
    return `${s.header}.${s.payload}.`
  }],
  ['signed by another EdDSA key with the real kid', async (real) => {
    const { privateKey } = await generateKeyPair('EdDSA', { crv: 'Ed25519' })
    const kid = decodeProtectedHeader(real).kid ?? ''
    return await new SignJWT(decodeJwt(real)).setProtectedHeader({ alg: 'EdDSA', kid, typ: 'at+jwt' }).sign(privateKey)
  }],
  ['signed by another EdDSA key with its own kid', async (real) => {
    const { privateKey } = await generateKeyPair('EdDSA', { crv: 'Ed25519' })
    return await new SignJWT(decodeJwt(real)).setProtectedHeader({ alg: 'EdDSA', kid: 'attacker-key', typ: 'at+jwt' }).sign(privateKey)
  }],
  ['HS256 with the public JWK (JSON) as the HMAC secret', async (real, identity) => {
    const jwks = await http(`${identity.publicUrl}/.well-known/jwks.json`)
    const kid = decodeProtectedHeader(real).kid ?? ''
    const jwk = jwks.body.keys.find((k: { kid: string }) => k.kid === kid)
    return await new SignJWT(decodeJwt(real)).setProtectedHeader({ alg: 'HS256', kid, typ: 'at+jwt' })
      .sign(new TextEncoder().encode(JSON.stringify(jwk)))
  }],
  ['HS256 with the raw public key bytes as the HMAC secret', async (real, identity) => {
    const jwks = await http(`${identity.publicUrl}/.well-known/jwks.json`)
    const kid = decodeProtectedHeader(real).kid ?? ''
    const jwk = jwks.body.keys.find((k: { kid: string }) => k.kid === kid)
    return await new SignJWT(decodeJwt(real)).setProtectedHeader({ alg: 'HS256', kid, typ: 'at+jwt' })
      .sign(Buffer.from(jwk.x as string, 'base64url'))
  }],
  ['no kid', async (real) => {
    const { privateKey } = await generateKeyPair('EdDSA', { crv: 'Ed25519' })
    return await new SignJWT(decodeJwt(real)).setProtectedHeader({ alg: 'EdDSA', typ: 'at+jwt' }).sign(privateKey)
  }],
  ['the real key, wrong audience', async (real, identity) => await signWithRealKey(identity, { ...decodeJwt(real), aud: 'someone-else' })],
  ['the real key, wrong issuer', async (real, identity) => await signWithRealKey(identity, { ...decodeJwt(real), iss: 'https://evil.example' })],
  ['the real key, typ JWT instead of at+jwt', async (real, identity) => await signWithRealKey(identity, decodeJwt(real), { typ: 'JWT' })],
  ['the real key, no sid claim', async (real, identity) => {
    const { sid: _sid, ...claims } = decodeJwt(real)
    return await signWithRealKey(identity, claims)
  }],
  ['a refresh token in place of the access token', async (_real, identity) => {
    const answer = await postLogin(identity, ADA)
    return answer.body.refresh_token as string
  }],
  ['random text', async () => 'not-a-jwt-at-all']
]

/** Authorization headers that are not a well-formed Bearer credential. */
const MALFORMED_AUTHORIZATION: Array<[name: string, header: (real: string) => string]> = [
  ['Basic scheme', () => 'Basic ' + Buffer.from('ada@example.com:pw').toString('base64')],
  ['Bearer without a token', () => 'Bearer'],
  ['Bearer with two tokens', (real) => `Bearer ${real} ${real}`],
  ['two spaces after Bearer', (real) => `Bearer  ${real}`],
  ['a token with a forbidden character', (real) => `Bearer ${real}!`]
]

/** The protected public routes, each with how to call it for the session of `tokens`. */
const ROUTES: Array<[name: string, call: (url: string, tokens: TokenSet, headers: Record<string, string>) => Promise<HttpAnswer>]> = [
  ['POST /tokens', async (url, tokens, headers) => await http(`${url}/tokens`, { headers, body: { refresh_token: tokens.refresh_token } })],
  ['POST /jetons', async (url, tokens, headers) => await http(`${url}/jetons`, { headers, body: { refresh_token: tokens.refresh_token } })],
  ['DELETE /sessions/current', async (url, _tokens, headers) => await http(`${url}/sessions/current`, { method: 'DELETE', headers })]
]

t.test('security: shared Bearer cases on every protected route', async (t) => {
  for (const [routeName, call] of ROUTES) {
    t.test(routeName, async (t) => {
      const identity = await startWithUser(t)
      const victim = await identity.login()

      t.test('no Authorization header: 401 credentials_missing with a bare Bearer challenge', async (t) => {
        const answer = await call(identity.publicUrl, victim, {})
        assertProblem(t, answer, 401, 'credentials_missing')
        t.equal(answer.headers['www-authenticate'], 'Bearer realm="portier"')
      })

      for (const [name, header] of MALFORMED_AUTHORIZATION) {
        t.test(`malformed Authorization (${name}): 401 invalid_token`, async (t) => {
          const answer = await call(identity.publicUrl, victim, { authorization: header(victim.access_token) })
          assertProblem(t, answer, 401, 'invalid_token')
          t.match(answer.headers['www-authenticate'], INVALID_TOKEN_CHALLENGE)
        })
      }

      for (const [name, forge] of FORGED_BEARERS) {
        t.test(`${name}: 401 invalid_token`, async (t) => {
          const forged = await forge(victim.access_token, identity)
          const answer = await call(identity.publicUrl, victim, { authorization: `Bearer ${forged}` })
          assertProblem(t, answer, 401, 'invalid_token')
          t.match(answer.headers['www-authenticate'], INVALID_TOKEN_CHALLENGE)
          t.notMatch(answer.text, forged.slice(-20), 'the presented token is not echoed')
        })
      }

      t.test('none of the refused calls consumed the refresh token or revoked the session', async (t) => {
        t.equal((await identity.session(victim.access_token)).status, 'active')
        const answer = await identity.refresh(victim.access_token, victim.refresh_token)
        assertStatus(t, answer, 200)
      })
    })
  }
})

t.test('security: Bearer and refresh token must belong to the same session', async (t) => {
  t.test("session B's access token with session A's refresh token: 401, and A is not revoked", async (t) => {
    const { login, refresh, session } = await startWithUser(t)
    const a = await login()
    const b = await login()
    const answer = await refresh(b.access_token, a.refresh_token)
    assertProblem(t, answer, 401, 'refresh_token_invalid')
    t.equal((await session(a.access_token)).status, 'active')
    t.equal((await session(b.access_token)).status, 'active')
    const own = await refresh(a.access_token, a.refresh_token)
    t.equal(own.status, 200, "A's refresh still works afterwards")
  })

  t.test("a rotated refresh token of A presented with B's Bearer is not a reuse: A lives on", async (t) => {
    const { login, refresh, session } = await startWithUser(t)
    const a = await login()
    const b = await login()
    const a2 = await refresh(a.access_token, a.refresh_token)
    t.equal(a2.status, 200)
    const answer = await refresh(b.access_token, a.refresh_token, '/jetons')
    assertProblem(t, answer, 401, 'refresh_token_invalid')
    t.equal((await session(a.access_token)).status, 'active', 'someone else cannot get a session revoked')
    t.equal((await refresh(a2.body.access_token, a2.body.refresh_token)).status, 200)
  })
})

t.test('security: expiry of the access token', async (t) => {
  t.test('an expired access token is tolerated on /tokens and /jetons', async (t) => {
    const { login, refresh, clock } = await startWithUser(t)
    const first = await login()
    clock.advance(700_000)
    const viaTokens = await refresh(first.access_token, first.refresh_token, '/tokens')
    assertStatus(t, viaTokens, 200)
    clock.advance(700_000)
    const viaJetons = await refresh(first.access_token, viaTokens.body.refresh_token, '/jetons')
    assertStatus(t, viaJetons, 200)
  })

  t.test('an expired access token is refused for logout, and the session stays active', async (t) => {
    const { login, clock, logout, session } = await startWithUser(t)
    const first = await login()
    clock.advance(601_000)
    const answer = await logout(first.access_token)
    assertProblem(t, answer, 401, 'invalid_token')
    t.match(answer.headers['www-authenticate'], INVALID_TOKEN_CHALLENGE)
    t.equal((await session(first.access_token)).status, 'active')
  })

  t.test('the tolerance on /tokens is bounded by the refresh idle lifetime', async (t) => {
    const { login, refresh, clock } = await startWithUser(t, { env: { IDENTITY_REFRESH_IDLE_SECONDS: '3600' } })
    const first = await login()
    clock.advance((600 + 3600 + 1) * 1000)
    const answer = await refresh(first.access_token, first.refresh_token)
    assertProblem(t, answer, 401, 'invalid_token')
  })
})
