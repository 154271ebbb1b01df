import t, { type Test } from 'tap'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { generateApiKey } from '../../common/api-key-format.js'
import { KEYS_VERIFY_PATH, SESSIONS_REVOKED_PATH } from '../../common/internal-api.js'
import type { FastifyBaseLogger } from 'fastify'
import { pino } from 'pino'
import { createIdentityClient } from '../../gateway/auth/identity-client.js'
import { createMemoryRevocationShare } from '../../gateway/auth/revocation-share.js'
import { createTokenRevocations } from '../../gateway/auth/token-revocations.js'
import { assertProblem } from '../helpers/assert.js'
import { startGateway, type GatewaySetup, type TestGateway } from '../helpers/gateway.js'

/**
 * The gateway checks identity's internal answers against common/internal-api.ts. Here a
 * fake identity (a plain HTTP server) answers what the real one never would: an
 * answer outside the contract is identity unavailable (503, logged), never a key
 * accepted or a verdict cached, and a revocation feed outside it is not taken for
 * "nothing revoked": the gateway asks again from where it was.
 */

const CONTRACT_BREACH = 'identity answered outside the internal API contract; treated as unavailable'
const iso = (ms: number): string => new Date(ms).toISOString()

interface FakeIdentity {
  url: string
  /** The next answers' bodies, as sent (JSON or not). */
  verifyBody: string
  revokedBody: string
  verifyCalls: number
  /** The `since` of every revocation-feed request, in order. */
  revokedSince: string[]
}

async function startFakeIdentity (t: Test): Promise<FakeIdentity> {
  const fake: FakeIdentity = {
    url: '',
    verifyBody: '',
    revokedBody: JSON.stringify({ now: iso(Date.now()), sessions: [] }),
    verifyCalls: 0,
    revokedSince: []
  }
  const answer = (response: ServerResponse, body: string): void => {
    response.writeHead(200, { 'content-type': 'application/json' }).end(body)
  }
  const server = createServer((request: IncomingMessage, response: ServerResponse) => {
    const url = new URL(request.url ?? '/', 'http://fake')
    request.resume()
    request.on('end', () => {
      if (url.pathname === KEYS_VERIFY_PATH) {
        fake.verifyCalls++
        answer(response, fake.verifyBody)
      } else if (url.pathname === SESSIONS_REVOKED_PATH) {
        fake.revokedSince.push(url.searchParams.get('since') ?? '')
        answer(response, fake.revokedBody)
      } else if (url.pathname === '/.well-known/jwks.json') {
        answer(response, '{"keys":[]}')
      } else {
        answer(response, '{"status":"ok"}')
      }
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(async () => { await new Promise((resolve) => server.close(resolve)) })
  fake.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return fake
}

async function startGatewayBefore (t: Test, fake: FakeIdentity): Promise<TestGateway> {
  const identity = {
    publicUrl: fake.url,
    adminUrl: fake.url,
    serviceToken: 's'.repeat(32),
    config: { issuer: 'portier-identity', audience: 'portier-gateway', eventsChannel: 'portier:events' }
  } as unknown as GatewaySetup['identity']
  return await startGateway(t, {
    identity,
    // Nothing listens there: a request that passes authentication ends as 502 upstream_unavailable.
    upstreams: { upstreams: [{ name: 'backoffice', target: 'http://127.0.0.1:1', routes: [{ method: 'GET', path: '/users', permission: 'users:list' }] }] },
    options: { documentationRoutes: false }
  })
}

const breaches = (gateway: TestGateway, path: string): number =>
  gateway.logs.filter((line) => line.msg === CONTRACT_BREACH && line.path === path).length

t.test('a key verdict outside the contract: 503 identity_unavailable, logged, nothing accepted or cached', async (t) => {
  const fake = await startFakeIdentity(t)
  const gateway = await startGatewayBefore(t, fake)
  const valid = { id: 'key_1', name: 'one', permissions: ['users:list'], expires_at: null }
  const malformed: Array<[string, string]> = [
    ['valid without key or deprecation', '{"valid":true}'],
    ['permissions not a list', JSON.stringify({ valid: true, key: { ...valid, permissions: '*' }, deprecation: null })],
    ['expires_at not a time', JSON.stringify({ valid: true, key: { ...valid, expires_at: 'tomorrow' }, deprecation: null })],
    ['valid as a string', JSON.stringify({ valid: 'true', key: valid, deprecation: null })],
    ['a reason the contract does not know', '{"valid":false,"reason":"banned"}'],
    ['not JSON', '<html>oops</html>'],
    ['empty', '']
  ]
  const { key } = generateApiKey()
  const request = { headers: { 'x-api-key': key } }
  for (const [label, body] of malformed) {
    fake.verifyBody = body
    const calls = fake.verifyCalls
    const logged = breaches(gateway, KEYS_VERIFY_PATH)
    // Twice: a verdict remembered from the first answer would spare identity the second call.
    for (const attempt of ['first', 'again']) {
      const answer = await gateway.call('/users', request)
      assertProblem(t, answer, 503, 'identity_unavailable', `${label} (${attempt})`)
      t.equal(answer.headers['retry-after'], '5', `${label} (${attempt}): Retry-After, as when identity is down`)
    }
    t.equal(fake.verifyCalls, calls + 2, `${label}: identity was asked both times (nothing cached)`)
    t.equal(breaches(gateway, KEYS_VERIFY_PATH), logged + 2, `${label}: each answer was logged`)
  }
  t.notOk(gateway.logText().includes(key), 'the key never appears in the logs')

  fake.verifyBody = JSON.stringify({ valid: true, key: valid, deprecation: null })
  assertProblem(t, await gateway.call('/users', request), 502, 'upstream_unavailable', 'control: the same key, answered within the contract, is accepted')
  fake.verifyBody = '{"valid":true}'
  assertProblem(t, await gateway.call('/users', request), 502, 'upstream_unavailable', 'control: and now cached, identity is not asked')
  const refused = generateApiKey().key
  fake.verifyBody = '{"valid":false,"reason":"revoked"}'
  assertProblem(t, await gateway.call('/users', { headers: { 'x-api-key': refused } }), 401, 'invalid_api_key', 'control: a refusal within the contract is a 401')
})

t.test('a revocation feed outside the contract: logged, and asked again from where it was', async (t) => {
  const fake = await startFakeIdentity(t)
  const revokedAt = Date.now() - 1_000
  const session = { id: 'ses_revoked', revoked_at: iso(revokedAt), expires_at: iso(revokedAt + 86_400_000) }
  fake.revokedBody = JSON.stringify({ now: iso(Date.now()), sessions: [{ ...session, revoked_at: 'a moment ago' }] })
  const gateway = await startGatewayBefore(t, fake)
  t.equal(breaches(gateway, SESSIONS_REVOKED_PATH), 1, 'a gateway logs the answer it gets at start')
  await gateway.app.close()
  const asked = fake.revokedSince.length

  // The same client and revocation set a gateway wires, driven one sync at a time.
  const logged: Array<{ msg?: string, path?: string }> = []
  const log = pino({ level: 'warn' }, { write: (line: string) => { logged.push(JSON.parse(line)) } }) as unknown as FastifyBaseLogger
  const identity = createIdentityClient({ publicUrl: fake.url, internalUrl: fake.url, serviceToken: 's'.repeat(32), timeoutMs: 2_000, log })
  t.teardown(identity.close)
  const revocations = createTokenRevocations({ identity, share: createMemoryRevocationShare(), log })
  const feedBreaches = (): number => logged.filter((line) => line.msg === CONTRACT_BREACH && line.path === SESSIONS_REVOKED_PATH).length
  await revocations.sync()
  t.equal(feedBreaches(), 1, 'a bad timestamp: logged')
  t.equal(revocations.check(session.id, 'usr_1', 0), null, 'and nothing was taken from it')

  fake.revokedBody = 'not json'
  await revocations.sync()
  t.equal(feedBreaches(), 2, 'not JSON: logged')
  fake.revokedBody = JSON.stringify({ now: iso(Date.now()), sessions: [session] })
  await revocations.sync()
  t.equal(revocations.check(session.id, 'usr_1', 0), 'session_revoked', 'the first answer within the contract is heard')

  // Until then the feed was read from a token lifetime ago, every time; after it, from about now.
  const lifetimeAgo = Date.now() - 600_000
  const [first, retry, heard] = fake.revokedSince.slice(asked).map((since) => Date.parse(since))
  for (const [label, since] of [['first', first], ['after not-JSON', retry], ['when heard', heard]] as const) {
    t.ok((since as number) <= lifetimeAgo, `${label}: asked from a token lifetime ago (nothing counted as read)`)
  }
  await revocations.sync()
  t.ok(Date.parse(fake.revokedSince.at(-1) as string) > lifetimeAgo, 'control: once read, the next sync asks from about then')
})
