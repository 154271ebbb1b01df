import t from 'tap'
import { SignJWT, generateKeyPair } from 'jose'
import { generateApiKey } from '../../common/api-key-format.js'
import { createAccessTokenVerifier } from '../../gateway/auth/access-token-verifier.js'
import { createApiKeyVerifier } from '../../gateway/auth/api-key-verifier.js'
import { createAuthenticator, type Principal } from '../../gateway/auth/authenticate.js'
import { authorise } from '../../gateway/auth/authorise.js'
import type { JwksCache } from '../../gateway/auth/jwks-cache.js'
import { createNoKeyCacheL2 } from '../../gateway/auth/key-cache-l2.js'
import type { TokenRevocations } from '../../gateway/auth/token-revocations.js'
import { createGatewayMetrics } from '../../gateway/observability/metrics.js'
import { buildRouteTable, parseUpstreams } from '../../gateway/routing/index.js'

/**
 * A request whose credential was verified before (a key in L1, a token checked once)
 * is authenticated synchronously: the credential stage hands back its principal, not a
 * promise, and the same principal object every time (built once per verification).
 * Only a credential identity or the signing keys must vouch for makes it wait. The
 * real verifiers and authenticator; identity and the signing keys are stand-ins.
 */

const ISSUER = 'http://identity.test'
const AUDIENCE = 'portier-gateway'

const table = buildRouteTable(parseUpstreams(`
upstreams:
  - name: backoffice
    target: http://backoffice.test
    routes:
      - { method: GET, path: /users, permission: users:list }
`, 'upstreams.yaml', 'yaml').config, { identityOrigin: ISSUER })

t.test('a cached credential passes the gate without a promise', async (t) => {
  const metrics = createGatewayMetrics()
  const { key } = generateApiKey()
  let identityCalls = 0
  const keys = createApiKeyVerifier({
    identity: {
      async verifyKey () {
        identityCalls++
        return { valid: true, key: { id: 'key_1', name: 'k', permissions: ['users:list'], expires_at: null }, deprecation: null }
      }
    },
    l2: createNoKeyCacheL2(),
    hmacKey: Buffer.alloc(32, 1),
    l1MaxEntries: 10,
    l1TtlMs: 60_000,
    l2TtlMs: 60_000,
    negativeTtlMs: 60_000,
    metrics
  })
  const signing = await generateKeyPair('EdDSA')
  const revocations = { check: () => null } as unknown as TokenRevocations
  const jwks = { resolve: async () => signing.publicKey } as unknown as JwksCache
  const tokens = createAccessTokenVerifier({ jwks, revocations, issuer: ISSUER, audience: AUDIENCE, cacheMaxEntries: 10 })
  const now = Math.floor(Date.now() / 1000)
  const token = await new SignJWT({ sid: 'ses_1', jti: 'jti_1', permissions: ['users:list'] })
    .setProtectedHeader({ alg: 'EdDSA', typ: 'at+jwt', kid: 'k1' })
    .setIssuer(ISSUER).setAudience(AUDIENCE).setSubject('usr_1').setIssuedAt(now).setExpirationTime(now + 600)
    .sign(signing.privateKey)

  const authenticate = createAuthenticator({ keys, tokens, metrics })
  const call = async (headers: Record<string, string>): Promise<{ sync: boolean, principal: Principal }> => {
    const authenticated = authenticate(headers)
    return { sync: !(authenticated instanceof Promise), principal: await authenticated }
  }

  const first = await call({ 'x-api-key': key })
  t.same([first.sync, first.principal.id], [false, 'key_1'], 'a key seen for the first time waits for identity')
  const again = await call({ 'x-api-key': key })
  t.same([again.sync, again.principal.id], [true, 'key_1'], 'the same key from L1: the principal at once')
  t.equal(again.principal, (await call({ 'x-api-key': key })).principal, 'the same principal object for every request with it')
  t.same(again.principal.forwardedHeaders, ['x-portier-principal', 'key_1', 'x-portier-principal-type', 'key', 'x-portier-permissions', 'users:list'], 'its forwarded headers made once')
  t.equal(identityCalls, 1, 'identity was asked once')
  const user = await call({ authorization: `Bearer ${token}` })
  t.same([user.sync, user.principal.id], [false, 'usr_1'], 'a token seen for the first time waits for its signature check')
  const userAgain = await call({ authorization: `Bearer ${token}` })
  t.same([userAgain.sync, userAgain.principal.id], [true, 'usr_1'], 'the same token again: the principal at once')
  t.equal(userAgain.principal, user.principal, 'the same principal object')
})

t.test('the permission stage: the route\'s granting permissions against the principal\'s set', async (t) => {
  const route = table.routes.find((r) => r.pattern === '/users')
  if (route === undefined) throw new Error('no /users route')
  t.same(route.grantedBy, ['users:list', 'users:*', '*'], 'prepared with the route')
  const principal = (permissions: string[]): Principal => ({
    kind: 'key', id: 'key_1', permissions, permissionSet: new Set(permissions), forwardedHeaders: [], answerHeaders: [], deprecation: null, secretLookupId: null, user: null, policies: [], validUntil: Infinity, accessPrincipal: { type: 'api_key', id: 'key_1' }
  })
  for (const granted of [['users:list'], ['users:*'], ['*'], ['tasks:list', 'users:list']]) {
    t.equal(authorise(route, principal(granted)).id, 'key_1', `${granted.join(',')} is let through`)
  }
  for (const granted of [[], ['users:read'], ['tasks:*'], ['users'], ['user:list']]) {
    t.throws(() => authorise(route, principal(granted)), { code: 'permission_denied', extensions: { missing_permission: 'users:list' } }, `${granted.join(',') || 'nothing'} is refused`)
  }
})
