import t from 'tap'
import { decodeProtectedHeader } from 'jose'
import { START, iso } from '../helpers/identity.js'
import { http } from '../helpers/http.js'
import { assertJson } from '../helpers/assert.js'
import { postLogin, refreshTokens, startWithAdmin, type TokenSet } from '../helpers/session-setup.js'

/**
 * /admin/signing-keys: list and rotate. A rotation makes a new key sign at once; the
 * old one stays published (JWKS) until every token it signed has expired (600 s,
 * plus 60 s for clock skew), and tokens it signed keep working meanwhile.
 */

const PUBLISH_MS = 600_000 + 60_000
const PASSWORD = 'correct horse battery'

t.test('happy: list, rotate, publish the old key until its tokens expired', async (t) => {
  const s = await startWithAdmin(t)
  const { admin, clock, publicUrl } = s
  const login = async (): Promise<TokenSet> => (await postLogin(s, { email: 'ada@example.com', password: PASSWORD })).body
  const jwksKids = async (): Promise<string[]> => (await http(`${publicUrl}/.well-known/jwks.json`)).body.keys.map((k: { kid: string }) => k.kid)
  await admin('POST', '/admin/users', { email: 'ada@example.com', password: PASSWORD })

  const before = await admin('GET', '/admin/signing-keys')
  assertJson(t, before, 200)
  t.equal(before.body.signing_keys.length, 1)
  const first = before.body.signing_keys[0]
  t.same(Object.keys(first).sort(), ['alg', 'created_at', 'kid', 'publish_until', 'retired_at', 'status'], 'public data only')
  t.match(first, { kid: String, alg: 'EdDSA', status: 'active', created_at: iso(START), retired_at: null, publish_until: null })
  const oldTokens = await login()
  t.equal(decodeProtectedHeader(oldTokens.access_token).kid, first.kid)

  clock.advance(1_000)
  const rotatedAt = START + 1_000
  const rotated = await admin('POST', '/admin/signing-keys/rotate')
  assertJson(t, rotated, 200)
  const second = rotated.body.signing_key
  t.match(second, { kid: String, alg: 'EdDSA', status: 'active', created_at: iso(rotatedAt), retired_at: null, publish_until: null })
  t.not(second.kid, first.kid, 'a new key')

  const after = await admin('GET', '/admin/signing-keys')
  t.same(after.body, {
    signing_keys: [
      second,
      { ...first, status: 'published', retired_at: iso(rotatedAt), publish_until: iso(rotatedAt + PUBLISH_MS) }
    ]
  }, 'the new key is active, the old one published')
  t.notOk(after.text.includes('PRIVATE') || after.text.includes('"d"'), 'no private key material')

  t.equal(decodeProtectedHeader((await login()).access_token).kid, second.kid, 'the new key signs at once')
  t.same((await jwksKids()).sort(), [first.kid, second.kid].sort(), 'both published')
  const refreshed = await refreshTokens(s, oldTokens)
  assertJson(t, refreshed, 200, 'a token the old key signed still works')
  t.equal(decodeProtectedHeader(refreshed.body.access_token).kid, second.kid)

  clock.advance(PUBLISH_MS - 1)
  t.match((await admin('GET', '/admin/signing-keys')).body.signing_keys[1], { kid: first.kid, status: 'published' }, '1 ms before')
  clock.advance(1)
  t.match((await admin('GET', '/admin/signing-keys')).body.signing_keys[1], { kid: first.kid, status: 'retired' }, 'then retired')
  t.same(await jwksKids(), [second.kid], 'and no longer published')
})
