import t from 'tap'
import { startGateway, startStack } from '../../helpers/gateway.js'
import { parseFieldList, rate, upstreamsWithPolicies } from '../../helpers/traffic.js'

t.test('identity\'s anonymous routes are limited per client network', async (t) => {
  const stack = await startStack(t, { checkLookups: false })
  const gateway = await startGateway(t, {
    ...stack.gatewaySetup,
    upstreams: upstreamsWithPolicies(stack.upstreamUrl, {}),
    trustProxy: '127.0.0.1',
    options: { anonymousPolicies: [rate('anonymous', 3, 60, 'ip')], legacyRateLimitHeaders: true }
  })
  const from = (ip: string) => ({ headers: { 'x-forwarded-for': ip } })
  const statuses = []
  for (let i = 0; i < 4; i++) statuses.push((await gateway.call('/.well-known/jwks.json', from('203.0.113.7'))).status)
  t.same(statuses, [200, 200, 200, 429], 'three per minute from one address')
  const refusedLogin = await gateway.call('/sessions', { ...from('203.0.113.7'), body: { session: { email: 'ada@example.com', password: 'wrong' } } })
  t.equal(refusedLogin.status, 429, 'login is refused too, before identity checks any password')
  t.equal(refusedLogin.body.code, 'rate_limited')
  const other = await gateway.call('/.well-known/jwks.json', from('198.51.100.4'))
  t.equal(other.status, 200, 'another address has its own count')
  t.equal(parseFieldList(other.headers.ratelimit).get('anonymous')?.r, 2)
  t.equal(other.headers['x-ratelimit-limit'], '3', 'the legacy fields when configured')
  t.equal(other.headers['x-ratelimit-remaining'], '2')
  t.ok(Number(other.headers['x-ratelimit-reset']) >= 0)
  const junk = []
  for (const value of ['"not an address"', 'localhost', '999.1.1.1', 'x'.repeat(300)]) junk.push((await gateway.call('/.well-known/jwks.json', from(value))).status)
  t.same(junk, [200, 200, 200, 429], 'forwarded values that are not addresses share one count: junk neither escapes the limit nor names a count')
  const v6a = await gateway.call('/.well-known/jwks.json', from('2001:db8:1:2::1'))
  const v6b = await gateway.call('/.well-known/jwks.json', from('2001:db8:1:2::ffff'))
  t.equal(parseFieldList(v6b.headers.ratelimit).get('anonymous')?.r, (parseFieldList(v6a.headers.ratelimit).get('anonymous')?.r ?? 0) - 1,
    'IPv6 addresses of one /64 share a count')
})

t.test('without legacy fields configured, only RateLimit and RateLimit-Policy are sent', async (t) => {
  const stack = await startStack(t, { checkLookups: false })
  const answer = await stack.gateway.call('/.well-known/jwks.json')
  t.equal(answer.status, 200)
  t.same(parseFieldList(answer.headers['ratelimit-policy']).get('anonymous'), { q: 600, w: 60 }, 'the default: 600 a minute per client network')
  t.equal(answer.headers['x-ratelimit-limit'], undefined)
})
