import t from 'tap'
import Fastify from 'fastify'
import { ConfigError } from '../../common/config.js'
import { portierGateway, type GatewayPluginOptions } from '../../gateway/plugin.js'
import { assertJson, assertProblem } from '../helpers/assert.js'
import { mockUpstreams, startStack } from '../helpers/gateway.js'
import { http, rawRequest } from '../helpers/http.js'

t.test('the plugin mounted in a host app that has routes of its own', async (t) => {
  const s = await startStack(t)
  const key = await s.createKey(['users:list'])
  const host = Fastify()
  host.get('/host/hello', async () => ({ hello: 'from the host' }))
  host.post('/host/echo', async (request) => ({ received: request.body }))
  await host.register(portierGateway, {
    upstreams: mockUpstreams(s.upstreamUrl),
    identity: { publicUrl: s.publicUrl, internalUrl: s.adminUrl, serviceToken: s.serviceToken },
    eventsChannel: s.config.eventsChannel,
    redisUrl: s.redis.url,
    now: s.clock.now,
    observabilityRoutes: false
  })
  t.teardown(() => host.close())
  const url = await host.listen({ host: '127.0.0.1', port: 0 })

  assertJson(t, await http(`${url}/host/hello`), 200, 'a host route answers')
  t.same((await http(`${url}/host/hello`)).body, { hello: 'from the host' }, 'with the host\'s body, no credential needed')
  const echoed = await http(`${url}/host/echo`, { body: { any_thing: 1 } })
  t.same(echoed.body, { received: { any_thing: 1 } }, 'the host keeps its own JSON parsing')

  const users = await http(`${url}/users?per_page=3`, { headers: { 'x-api-key': key.key } })
  assertJson(t, users, 200, 'the gateway proxies beside the host routes')
  t.equal(users.body.users.length, 3, 'the upstream\'s page')
  assertProblem(t, await http(`${url}/users`), 401, 'credentials_missing', 'the gateway\'s rules hold inside the host')
  assertProblem(t, await http(`${url}/users`, { headers: { 'x-api-key': key.key, accept: 'text/html' } }), 406, 'not_acceptable',
    'the JSON-only Accept check applies to gateway routes inside the host')
  t.equal((await http(`${url}/host/hello`, { headers: { accept: 'text/html' } })).status, 200, 'but not to the host\'s own routes')
  t.equal(typeof host.portierGateway.reload, 'function', 'the host can reach the gateway (reload on its own signal)')
  t.same(Object.keys(host.portierGateway).sort(), ['metrics', 'metricsRoute', 'reload', 'table', 'verify'],
    'and only what a host needs (verify: the decision a verify listener answers with): no verifier, cache or connection of the runtime')
  t.same(Object.keys(host.portierGateway.metrics), ['registry'], 'of the metrics, the registry alone')
  t.equal((await http(`${url}/healthz`)).status, 404, 'observability routes stay off when the host asks')

  // A plain Fastify host has no query check of its own: the gate's holds on the gateway's routes.
  assertProblem(t, await rawRequest(url, '/users?a=%', { headers: { 'x-api-key': key.key } }), 400, 'malformed_query',
    'a malformed query on a gateway route inside the host')
  assertProblem(t, await rawRequest(url, '/.well-known/jwks.json?%zz'), 400, 'malformed_query', 'on identity\'s routes too, never a 500')
  assertProblem(t, await rawRequest(url, '/users?%5Fmethod=DELETE', { headers: { 'x-api-key': key.key } }), 400, 'method_override_refused',
    'an encoded _method inside the host')
  assertProblem(t, await rawRequest(url, '/users', { headers: { 'x-api-key': key.key, host: 'a,b.example' } }), 400, 'malformed_host',
    'a malformed Host inside the host')
  const echoedQuery = await rawRequest(url, '/users?per_page=1&next=/..', { headers: { 'x-api-key': key.key } })
  assertJson(t, echoedQuery, 200, 'a path-like query value is forwarded, not refused')
})

t.test('options are validated at registration, naming the bad one', async (t) => {
  const valid: GatewayPluginOptions = {
    upstreams: { upstreams: [{ name: 'mock', target: 'http://127.0.0.1:1', routes: [{ method: 'GET', path: '/users', permission: 'users:list' }] }] },
    identity: { publicUrl: 'http://127.0.0.1:1', internalUrl: 'http://127.0.0.1:2', serviceToken: 'x'.repeat(32) }
  }
  const cases: Array<[string, Record<string, unknown>, RegExp]> = [
    ['a short service token', { identity: { ...valid.identity, serviceToken: 'short' } }, /identity\.serviceToken/],
    ['a negative TTL', { keyCache: { l1TtlSeconds: -1 } }, /keyCache\.l1TtlSeconds/],
    ['an unknown option', { cacheSize: 3 }, /cacheSize: is not a known option/],
    ['a non-URL identity', { identity: { ...valid.identity, publicUrl: 'identity' } }, /identity\.publicUrl/],
    ['both Redis settings', { redisUrl: 'redis://127.0.0.1:1', redisClusterNodes: ['127.0.0.1:2'] }, /redisUrl and redisClusterNodes: set one of them, not both/],
    ['a bad cluster node', { redisClusterNodes: ['127.0.0.1:2', 'nope'] }, /redisClusterNodes: node 2 of 2 \("nope"\) is not host:port/],
    ['an empty cluster', { redisClusterNodes: [] }, /redisClusterNodes: must NOT have fewer than 1 items/],
    ['an unusual header name that is not a header name', { allowedUnusualHeaders: ['x legacy'] }, /allowedUnusualHeaders\.0: must match pattern/],
    ['an allowed name that needs no allowing', { allowedUnusualHeaders: ['x-legacy-id'] }, /allowedUnusualHeaders\[0\]: x-legacy-id has only letters, digits and -/],
    ['an allowed name that aliases x-forwarded-for', { allowedUnusualHeaders: ['x_legacy', 'x_forwarded_for'] },
      /allowedUnusualHeaders\[1\]: x_forwarded_for reads as a header the gateway sets or strips \(X_FORWARDED_FOR\)/],
    ['an allowed name that aliases the principal', { allowedUnusualHeaders: ['X.Portier.Principal'] }, /allowedUnusualHeaders\[0\]: X\.Portier\.Principal reads as a header/],
    ['an allowed name that aliases a path override', { allowedUnusualHeaders: ['x_original_url'] }, /allowedUnusualHeaders\[0\]: x_original_url reads as/],
    ['an allowed name that aliases the credential', { allowedUnusualHeaders: ['x_api_key'] }, /allowedUnusualHeaders\[0\]: x_api_key reads as/],
    ['metrics on the app without a token', { metricsRoute: true }, /metricsRoute: needs metricsToken/],
    ['a short metrics token', { metricsRoute: true, metricsToken: 'm'.repeat(31) }, /metricsToken/],
    ['a metrics token no Authorization header can carry', { metricsRoute: true, metricsToken: 'a metrics token with spaces in it, 40 chars' }, /metricsToken/],
    ['a metrics token with the route off', { metricsToken: 'm'.repeat(32) }, /metricsToken: is set but metricsRoute is off/]
  ]
  for (const [label, change, message] of cases) {
    const err = await registrationError({ ...valid, ...change } as GatewayPluginOptions)
    t.ok(err instanceof ConfigError, `${label}: a ConfigError`)
    t.match((err as Error).message, message, `${label}: names the option`)
  }
  t.match((await registrationError({ ...valid, upstreamsFile: 'x.yaml' }) as Error).message,
    /exactly one of upstreamsFile and upstreams/, 'both upstreams sources at once')
  const badUpstreams = await registrationError({ ...valid, upstreams: { upstreams: [{ name: 'Bad Name', target: 'ftp://x', routes: [] }] } })
  t.ok(badUpstreams instanceof ConfigError, 'an invalid upstreams object is a ConfigError')
  t.match((badUpstreams as Error).message, /upstreams\[0\]\.name/, 'naming the field')
})

t.test('in a host app, /metrics is off by default; on, it takes the token, and the registry is the host\'s to serve', async (t) => {
  const s = await startStack(t)
  const options: GatewayPluginOptions = {
    upstreams: mockUpstreams(s.upstreamUrl),
    identity: { publicUrl: s.publicUrl, internalUrl: s.adminUrl, serviceToken: s.serviceToken },
    eventsChannel: s.config.eventsChannel,
    now: s.clock.now
  }
  const plain = Fastify()
  await plain.register(portierGateway, options)
  t.teardown(() => plain.close())
  const plainUrl = await plain.listen({ host: '127.0.0.1', port: 0 })
  t.equal((await http(`${plainUrl}/healthz`)).status, 200, 'the probes are there')
  assertProblem(t, await http(`${plainUrl}/metrics`), 404, 'not_found', 'metrics are not, by default')
  t.match(await plain.portierGateway.metrics.registry.metrics(), /portier_gateway_requests_total/, 'the host reads the registry itself')

  const token = 'metrics-token-of-the-host-app'.padEnd(40, '~')
  const exposed = Fastify()
  await exposed.register(portierGateway, { ...options, metricsRoute: true, metricsToken: token })
  t.teardown(() => exposed.close())
  const exposedUrl = await exposed.listen({ host: '127.0.0.1', port: 0 })
  // A plain Fastify host renders no problems itself: the route's own context does.
  assertProblem(t, await http(`${exposedUrl}/metrics`), 401, 'metrics_unauthorized', 'without the token, in a host that is not a Portier app')
  assertProblem(t, await http(`${exposedUrl}/metrics`, { bearer: token.slice(1) }), 401, 'metrics_unauthorized', 'a wrong token')
  const scraped = await http(`${exposedUrl}/metrics`, { bearer: token })
  t.equal(scraped.status, 200, 'the token: 200')
  t.match(scraped.text, /portier_gateway_requests_total/, 'Prometheus text')
})

async function registrationError (options: GatewayPluginOptions): Promise<unknown> {
  const app = Fastify({ logger: false })
  try {
    await app.register(portierGateway, options)
    await app.ready()
    return null
  } catch (err) {
    return err
  } finally {
    await app.close().catch(() => {})
  }
}
