import t from 'tap'
import { request as httpRequest } from 'node:http'
import { loadGatewayConfig } from '../../../gateway/config.js'
import { ConfigError } from '../../../common/config.js'
import { assertProblem, assertStatus } from '../../helpers/assert.js'
import { http, rawRequest, type RawAnswer } from '../../helpers/http.js'
import { SHAPES, startVerifyStack } from './verify-stack.js'

t.test('Envoy ext_authz: the request as Envoy sends it to an HTTP authorization service', async (t) => {
  const s = await startVerifyStack(t)
  const writer = await s.createKey(['debug:write'])
  // What Envoy sends: the original method, path_prefix + the original path and query, the
  // allowed headers (the credential, Host), its own, and no body (Content-Length: 0).
  const envoy = async (method: string, path: string, key: string): Promise<RawAnswer> => await rawRequest(s.verifyUrl, `/v1/verify/envoy${path}`, {
    method,
    headers: { host: 'api.example.com', 'x-api-key': key, 'content-length': '0', 'x-forwarded-proto': 'https', 'x-envoy-expected-rq-timeout-ms': '200', 'x-forwarded-for': '203.0.113.9', accept: '*/*' }
  })
  const allowed = await envoy('POST', '/echo?a=1', writer.key)
  assertStatus(t, allowed, 200, 'POST /echo with debug:write: allowed')
  t.equal(allowed.headers['x-portier-principal'], writer.id, 'allowed_upstream_headers can copy X-Portier-Principal')
  t.equal(allowed.headers['x-portier-verify-code'], 'VALID', 'code VALID')
  const refused = await envoy('GET', '/echo', writer.key)
  assertProblem(t, refused, 403, 'permission_denied', 'GET /echo needs debug:read: the gateway\'s own 403 problem, which Envoy passes to the client')
  t.equal(refused.headers['x-portier-principal'], writer.id, 'a refusal names the key too')
  const tricked = await envoy('GET', '/echo/../users', writer.key)
  assertProblem(t, tricked, 400, 'malformed_path', 'a path trick is refused, as the gateway refuses it')
})

t.test('who may ask, and whose forwarded headers count', async (t) => {
  const s = await startVerifyStack(t, { verify: { clients: ['10.0.0.0/8'], proxies: ['192.0.2.1/32'] } })
  const key = await s.createKey(['users:list'])
  assertProblem(t, await http(`${s.verifyUrl}/v1/verify`, { body: { key: key.key, method: 'GET', path: '/users' } }), 403, 'verify_caller_refused', 'JSON from an address not in GATEWAY_VERIFY_CLIENTS')
  const nginx = await http(`${s.verifyUrl}/v1/verify/nginx`, { headers: { 'x-api-key': key.key, 'x-original-method': 'GET', 'x-original-uri': '/users' } })
  t.equal(nginx.status, 403, 'the nginx shape from an address not in GATEWAY_VERIFY_PROXIES: 403, the deny nginx understands')
  t.equal(nginx.headers['x-portier-principal'], '', 'naming no one')
  assertProblem(t, await http(`${s.verifyUrl}/v1/verify/forward-auth`, { headers: { 'x-api-key': key.key, 'x-forwarded-method': 'GET', 'x-forwarded-uri': '/users' } }), 403, 'verify_caller_refused', 'forward auth too')
})

t.test('per-IP limits count the client a proxy names, and only a proxy may name it', async (t) => {
  const s = await startVerifyStack(t, { verify: { clients: ['127.0.0.1/32'], proxies: ['127.0.0.2/32'] } })
  const key = await s.createKey(['users:list'], { policies: [{ name: 'one-per-ip', kind: 'rate', limit: 1, window_seconds: 600, partition: 'ip' }] })
  const ask = async (forwardedFor: string): Promise<string> => (await s.ask('json', 'GET', '/users', { 'x-api-key': key.key }, { 'x-forwarded-for': forwardedFor })).code
  t.equal(await ask('203.0.113.1'), 'VALID', 'a JSON client\'s X-Forwarded-For is not believed: the count is the caller\'s own')
  t.equal(await ask('203.0.113.2'), 'RATE_LIMITED', 'so another forwarded address changes nothing')
  // The proxy is another loopback address (all of 127/8 is loopback on Linux).
  const { port } = new URL(s.verifyUrl)
  const viaProxy = async (forwardedFor: string): Promise<string> => await new Promise((resolve, reject) => {
    const request = httpRequest({
      host: '127.0.0.1',
      port,
      localAddress: '127.0.0.2',
      path: '/v1/verify/nginx',
      agent: false,
      headers: { 'x-api-key': key.key, 'x-original-method': 'GET', 'x-original-uri': '/users', 'x-forwarded-for': forwardedFor }
    }, (response) => {
      response.resume()
      resolve(String(response.headers['x-portier-verify-code']))
    })
    request.on('error', reject)
    request.end()
  })
  const first = await viaProxy('198.51.100.7')
  t.equal(first, 'VALID', 'from the proxy, the client it names has its own count')
  t.equal(await viaProxy('10.9.9.9, 198.51.100.7'), 'RATE_LIMITED', 'the last X-Forwarded-For entry is the client: a client cannot pick a fresh count by prefixing one')
  t.equal(await viaProxy('198.51.100.8'), 'VALID', 'another client, another count')
})

t.test('a question badly put is answered, and changes nothing', async (t) => {
  const s = await startVerifyStack(t)
  const key = await s.createKey(['users:list'], { policies: [{ name: 'one', kind: 'rate', limit: 1, window_seconds: 600, partition: 'key' }] })
  assertStatus(t, await http(`${s.verifyUrl}/v1/verify`, { body: { key: key.key, path: '/users' } }), 400, 'JSON without a method: 400')
  assertStatus(t, await http(`${s.verifyUrl}/v1/verify`, { body: { key: key.key, method: 'GET', path: 'users' } }), 400, 'a path not starting with /: 400')
  assertProblem(t, await http(`${s.verifyUrl}/v1/verify`, { body: { key: key.key, method: 'GET', path: '/users', ip: 'nowhere' } }), 400, 'verify_question_invalid', 'an ip that is not one: 400')
  const nginx = await http(`${s.verifyUrl}/v1/verify/nginx`, { headers: { 'x-api-key': key.key } })
  t.equal(nginx.status, 403, 'nginx without X-Original-*: 403, never a status nginx makes a 500 of')
  assertProblem(t, await http(`${s.verifyUrl}/v1/verify/forward-auth`, { headers: { 'x-api-key': key.key } }), 400, 'verify_question_invalid', 'forward auth without X-Forwarded-*: 400')
  t.equal((await s.ask('json', 'GET', '/users', { 'x-api-key': key.key })).code, 'VALID', 'none of them took the rate limit\'s one unit')
})

t.test('an allow may be kept for a second only when opted in, and never one that took a limit', async (t) => {
  const s = await startVerifyStack(t, { verify: { allowMaxAgeSeconds: 1 } })
  const plain = await s.createKey(['users:list'])
  const limited = await s.createKey(['users:list'], { policies: [{ name: 'many', kind: 'rate', limit: 100, window_seconds: 60, partition: 'key' }] })
  t.equal((await s.ask('nginx', 'GET', '/users', { 'x-api-key': plain.key })).answer.headers['cache-control'], 'private, max-age=1', 'an allow without limits')
  t.equal((await s.ask('nginx', 'GET', '/users', { 'x-api-key': limited.key })).answer.headers['cache-control'], 'no-store', 'an allow that took a rate limit')
  t.equal((await s.ask('nginx', 'GET', '/nowhere', { 'x-api-key': plain.key })).answer.headers['cache-control'], 'no-store', 'a deny')
  const expiring = await s.createKey(['users:list'], { expires_at: new Date(s.clock.now() + 60_000).toISOString() })
  t.equal((await s.ask('nginx', 'GET', '/users', { 'x-api-key': expiring.key })).answer.headers['cache-control'], 'private, max-age=1', 'a key good for a minute more')
  s.clock.advance(59_500)
  for (const shape of SHAPES.filter((name) => name !== 'json')) {
    const asked = await s.ask(shape, 'GET', '/users', { 'x-api-key': expiring.key })
    t.equal(asked.code, 'VALID', `${shape}: still allowed within its last second`)
    t.equal(asked.answer.headers['cache-control'], 'no-store', `${shape}: but not kept past its expiry`)
  }
})

t.test('GATEWAY_VERIFY_* configuration', async (t) => {
  const base = { IDENTITY_SERVICE_TOKEN: 'x'.repeat(40) }
  t.equal(loadGatewayConfig(base).verify, null, 'off unless GATEWAY_VERIFY_LISTENER is set')
  t.same(loadGatewayConfig({ ...base, GATEWAY_VERIFY_LISTENER: '127.0.0.1:3010' }).verify,
    { host: '127.0.0.1', port: 3010, clients: ['127.0.0.1/32', '::1/128'], proxies: ['127.0.0.1/32', '::1/128'], allowMaxAgeSeconds: 0 }, 'loopback only by default')
  t.same(loadGatewayConfig({ ...base, GATEWAY_VERIFY_LISTENER: '[::1]:3010', GATEWAY_VERIFY_PROXIES: '10.1.0.0/16, 192.0.2.7' }).verify?.proxies, ['10.1.0.0/16', '192.0.2.7'], 'an IPv6 listener, a proxy list')
  for (const [env, named] of [
    [{ GATEWAY_VERIFY_LISTENER: '3010' }, /GATEWAY_VERIFY_LISTENER: must be host:port/],
    [{ GATEWAY_VERIFY_LISTENER: '127.0.0.1:3010', GATEWAY_VERIFY_CLIENTS: '10.0.0.0/33' }, /GATEWAY_VERIFY_CLIENTS: "10.0.0.0\/33"/],
    [{ GATEWAY_VERIFY_LISTENER: '127.0.0.1:3010', GATEWAY_VERIFY_PROXIES: 'nginx' }, /GATEWAY_VERIFY_PROXIES: "nginx"/],
    [{ GATEWAY_VERIFY_ALLOW_MAX_AGE_SECONDS: '30' }, /GATEWAY_VERIFY_ALLOW_MAX_AGE_SECONDS/]
  ] as const) {
    let refusal = ''
    try {
      loadGatewayConfig({ ...base, ...env })
    } catch (err) {
      if (err instanceof ConfigError) refusal = err.message
    }
    t.match(refusal, named, `refused, naming it: ${JSON.stringify(env)}`)
  }
})
