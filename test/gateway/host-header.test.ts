import t from 'tap'
import { hostProblem } from '../../gateway/host-header.js'

/** The Host the gateway vouches for as X-Forwarded-Host is one host[:port], nothing else. */
t.test('accepted', async (t) => {
  for (const host of ['', 'example.com', 'EXAMPLE.com', 'a', 'api_v2.internal', 'x~y', '127.0.0.1', '127.0.0.1:3000', 'example.com:1',
    'example.com:65535', '[::1]', '[::1]:3000', '[2001:db8::1]:443', '[::ffff:127.0.0.1]', `${'a'.repeat(253)}:65535`]) {
    t.equal(hostProblem(host), null, JSON.stringify(host))
  }
})

t.test('refused, with the reason', async (t) => {
  const cases: Array<[string, RegExp]> = [
    ['example.com:', /port/], ['example.com:65536', /port/], ['example.com:99999', /port/], ['example.com:8o', /port/], ['example.com:-1', /port/],
    ['example.com:123456', /port/], ['a:1:2', /port/], [':8080', /host name/], ['[::1', /IPv6/], ['[not-ipv6]', /IPv6/], ['[::1]x', /host\[:port\]/],
    ['[::1]:', /port/], ['a,b', /host name/], ['a;b', /host name/], ["a'b", /host name/], ['user@example.com', /host name/],
    ['example.com/admin', /host name/], ['%65xample.com', /host name/], ['exa mple.com', /host name/], ['"example.com"', /host name/],
    ['example.com\t', /host name/], ['exämple.com', /host name/], ['a'.repeat(263), /longer/]
  ]
  for (const [host, reason] of cases) t.match(hostProblem(host), reason, JSON.stringify(host).slice(0, 60))
})
