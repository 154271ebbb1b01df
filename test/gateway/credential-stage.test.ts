import t from 'tap'
import Fastify from 'fastify'
import { SignJWT, generateKeyPair } from 'jose'
import { generateApiKey } from '../../common/api-key-format.js'
import { createAccessTokenVerifier } from '../../gateway/auth/access-token-verifier.js'
import { createApiKeyVerifier } from '../../gateway/auth/api-key-verifier.js'
import { createAuthenticator } from '../../gateway/auth/authenticate.js'
import type { JwksCache } from '../../gateway/auth/jwks-cache.js'
import { createNoKeyCacheL2 } from '../../gateway/auth/key-cache-l2.js'
import type { TokenRevocations } from '../../gateway/auth/token-revocations.js'
import { createGatewayMetrics } from '../../gateway/observability/metrics.js'
import { createRequestGate } from '../../gateway/request-gate.js'
import { buildRouteTable, parseUpstreams } from '../../gateway/routing/index.js'

/**
 * A request whose credential was verified before (a key in L1, a token checked once)
 * passes the whole gate synchronously: the gate hands back its decision, not a promise.
 * Only a credential identity or the signing keys must vouch for makes it wait. The
 * real verifiers, authenticator and gate; identity and the signing keys are stand-ins.
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

  const used: string[] = []
  const gate = createRequestGate({ table: () => table, authenticate: createAuthenticator({ keys, tokens, metrics }), usage: { record: (lookupId) => { used.push(lookupId) } }, traffic: { admit: () => {} } })
  const app = Fastify()
  app.get('/users', async (request, reply) => {
    const decided = gate(request, reply)
    const sync = !(decided instanceof Promise)
    const decision = await decided
    return { sync, principal: decision.principal?.id }
  })
  t.teardown(async () => { await app.close() })
  const call = async (headers: Record<string, string>) => (await app.inject({ url: '/users', headers })).json() as { sync: boolean, principal: string }

  t.same(await call({ 'x-api-key': key }), { sync: false, principal: 'key_1' }, 'a key seen for the first time waits for identity')
  t.same(await call({ 'x-api-key': key }), { sync: true, principal: 'key_1' }, 'the same key from L1: the decision at once')
  t.equal(identityCalls, 1, 'identity was asked once')
  t.equal(used.length, 2, 'both uses were counted')
  t.same(await call({ authorization: `Bearer ${token}` }), { sync: false, principal: 'usr_1' }, 'a token seen for the first time waits for its signature check')
  t.same(await call({ authorization: `Bearer ${token}` }), { sync: true, principal: 'usr_1' }, 'the same token again: the decision at once')
})
