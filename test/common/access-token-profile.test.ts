import t from 'tap'
import {
  ACCESS_TOKEN_TTL_SECONDS, ACCESS_TOKEN_TYP, accessTokenVerifyOptions, readAccessTokenClaims
} from '../../common/access-token-profile.js'

/** The one claims parser identity and the gateway read access tokens with. */

const CLAIMS = { sub: 'usr_1', sid: 'ses_1', jti: 'j1', iat: 1_700_000_000, exp: 1_700_000_000 + ACCESS_TOKEN_TTL_SECONDS, permissions: ['users:list'] }

t.test('the claims of a payload as identity issues it', async (t) => {
  t.same(readAccessTokenClaims({ ...CLAIMS, iss: 'i', aud: 'a', client_id: 'portier' }), { ...CLAIMS, policies: [] },
    'exactly the profile\'s claims, nothing else; no traffic policies when the token carries none')
  const tpol = [{ source: 'role:partner', policy: { name: 'burst', kind: 'rate', limit: 10, window_seconds: 1, partition: 'user' } }]
  t.same(readAccessTokenClaims({ ...CLAIMS, tpol })?.policies, tpol, 'the traffic policies of the user\'s roles (tpol)')
  t.same(readAccessTokenClaims({ ...CLAIMS, permissions: [] })?.permissions, [], 'no permission is a list too')
})

t.test('a payload with a claim missing or of the wrong type has no claims', async (t) => {
  const broken: Array<[string, Record<string, unknown>]> = [
    ['no sub', { sub: undefined }], ['sub a number', { sub: 1 }], ['no sid', { sid: undefined }], ['sid null', { sid: null }],
    ['jti a number', { jti: 7 }], ['iat a string', { iat: '1700000000' }], ['exp not finite', { exp: Number.NaN }],
    ['no permissions', { permissions: undefined }], ['permissions a string', { permissions: '*' }],
    ['a permission not a string', { permissions: ['users:list', 1] }],
    ['tpol not a list', { tpol: {} }], ['a tpol entry without its source', { tpol: [{ policy: { name: 'a', kind: 'concurrency', limit: 1, partition: 'key' } }] }],
    ['a tpol policy of an unknown kind', { tpol: [{ source: 'key', policy: { name: 'a', kind: 'bucket', limit: 1, partition: 'key' } }] }]
  ]
  for (const [label, change] of broken) t.equal(readAccessTokenClaims({ ...CLAIMS, ...change }), null, label)
})

t.test('jose is asked for the profile: typ, the given algorithms, issuer, audience, required claims', async (t) => {
  const options = accessTokenVerifyOptions({ issuer: 'i', audience: 'a', algorithms: ['EdDSA'], now: 1_000 })
  t.match(options, { typ: ACCESS_TOKEN_TYP, algorithms: ['EdDSA'], issuer: 'i', audience: 'a', requiredClaims: ['sub', 'sid', 'exp', 'iat', 'jti'] })
  t.equal((options.currentDate as Date).getTime(), 1_000, 'at the given time')
  t.notOk('clockTolerance' in options, 'no expiry tolerated unless asked')
  t.equal(accessTokenVerifyOptions({ issuer: 'i', audience: 'a', algorithms: ['ES256'], now: 0, toleratedExpirySeconds: 30 }).clockTolerance, 30)
})
