import t from 'tap'
import { clientNetwork } from '../../common/client-network.js'

/**
 * Per-IP login limits count an IPv4 address as itself (however written) and an IPv6
 * address by its /64, so that neither a second spelling nor the 2^64 addresses of one
 * subscriber's network gives a client fresh attempts.
 */

t.test('IPv4, plain or IPv4-mapped, is one bucket', async (t) => {
  for (const written of ['192.0.2.1', '::ffff:192.0.2.1', '::FFFF:192.0.2.1', '0:0:0:0:0:ffff:192.0.2.1', '::ffff:c000:201']) {
    t.equal(clientNetwork(written), '192.0.2.1', written)
  }
  t.not(clientNetwork('192.0.2.2'), clientNetwork('192.0.2.1'), 'another IPv4 address is another bucket')
})

t.test('IPv6 counts by /64, whatever the spelling', async (t) => {
  const network = clientNetwork('2001:db8:1:2::1')
  t.equal(network, '2001:db8:1:2::/64')
  for (const written of ['2001:db8:1:2::ffff', '2001:0db8:0001:0002:0000:0000:0000:0002', '2001:DB8:1:2:aaaa:bbbb:cccc:dddd', '2001:db8:1:2:0:0:192.0.2.1', 'fe80::1%eth0'.replace('fe80::1', '2001:db8:1:2::9')]) {
    t.equal(clientNetwork(written), network, written)
  }
  t.not(clientNetwork('2001:db8:1:3::1'), network, 'the next /64 is another bucket')
  t.equal(clientNetwork('::1'), '0:0:0:0::/64', 'loopback')
  t.equal(clientNetwork('fe80::1%eth0'), 'fe80:0:0:0::/64', 'a zone index is ignored')
})

t.test('anything else is kept as given', async (t) => {
  t.equal(clientNetwork('unknown'), 'unknown')
  t.equal(clientNetwork(''), '')
})
