import t from 'tap'
import { DEFAULT_LISTENER_TIMEOUTS, httpServerTimeouts } from '../../common/listener-limits.js'
import { loadGatewayConfig } from '../../gateway/config.js'
import { loadIdentityConfig } from '../../identity/config.js'
import { loadUpstreamMockConfig } from '../../upstream-mock/config.js'
import { configProblems } from '../helpers/config-problems.js'
import { WITH_SIGNING_KEY_ENCRYPTION } from '../helpers/signing-key-encryption.js'

/** Every service reads its listener limits under the same names, with the same defaults and checks. */

const TOKENS = { IDENTITY_ADMIN_TOKEN: 'a'.repeat(32), IDENTITY_SERVICE_TOKEN: 's'.repeat(32), ...WITH_SIGNING_KEY_ENCRYPTION }

const services: Array<[string, string, (env: Record<string, string>) => { timeouts?: unknown, unreadBodies?: unknown }]> = [
  ['gateway', 'GATEWAY', (env) => loadGatewayConfig({ ...TOKENS, ...env })],
  ['identity', 'IDENTITY', (env) => loadIdentityConfig({ ...TOKENS, ...env })],
  ['upstream-mock', 'UPSTREAM_MOCK', (env) => loadUpstreamMockConfig(env)]
]

for (const [name, prefix, load] of services) {
  t.test(`${name}: defaults, overrides, and a headers timeout above the request timeout refused`, async (t) => {
    t.same(load({}).timeouts, { headersMs: 10_000, requestMs: 30_000, keepAliveMs: 5_000 }, 'defaults')
    t.same(load({ [`${prefix}_HEADERS_TIMEOUT_MS`]: '1000', [`${prefix}_REQUEST_TIMEOUT_MS`]: '2000', [`${prefix}_KEEP_ALIVE_TIMEOUT_MS`]: '3000' }).timeouts,
      { headersMs: 1_000, requestMs: 2_000, keepAliveMs: 3_000 }, 'from the environment')
    t.same(configProblems(() => load({ [`${prefix}_HEADERS_TIMEOUT_MS`]: '5000', [`${prefix}_REQUEST_TIMEOUT_MS`]: '1000' })),
      [`${prefix}_HEADERS_TIMEOUT_MS: must not exceed ${prefix}_REQUEST_TIMEOUT_MS (5000 > 1000)`])
    t.match(configProblems(() => load({ [`${prefix}_REQUEST_TIMEOUT_MS`]: '0' })).join('\n'), new RegExp(`${prefix}_REQUEST_TIMEOUT_MS: must be >= 100`), 'no timeout cannot be configured away')
    t.match(configProblems(() => load({ [`${prefix}_BUFFERED_BODIES_MAX_BYTES`]: '1000' })).join('\n'), new RegExp(`${prefix}_BUFFERED_BODIES_MAX_BYTES: must be >= 65536`))
  })

  t.test(`${name}: what is read of a body a refusal left unread, and of a connection closed after its answer`, async (t) => {
    t.same(load({}).unreadBodies, { drainMaxBytes: 65_536, lingerMs: 5_000, lingerMaxBytes: 16 * 1_048_576 }, 'defaults')
    t.same(load({ [`${prefix}_UNREAD_BODY_DRAIN_MAX_BYTES`]: '0', [`${prefix}_LINGER_MS`]: '250', [`${prefix}_LINGER_MAX_BYTES`]: '1024' }).unreadBodies,
      { drainMaxBytes: 0, lingerMs: 250, lingerMaxBytes: 1_024 }, 'from the environment')
    t.match(configProblems(() => load({ [`${prefix}_LINGER_MS`]: '600000' })).join('\n'), new RegExp(`${prefix}_LINGER_MS: must be <= 60000`), 'a connection is never held open for long')
    t.match(configProblems(() => load({ [`${prefix}_LINGER_MAX_BYTES`]: 'lots' })).join('\n'), new RegExp(`${prefix}_LINGER_MAX_BYTES: `), 'the bad field is named')
    t.match(configProblems(() => load({ [`${prefix}_UNREAD_BODY_DRAIN_MAX_BYTES`]: '-1' })).join('\n'), new RegExp(`${prefix}_UNREAD_BODY_DRAIN_MAX_BYTES: must be >= 0`))
  })
}

t.test('the server checks its timeouts often enough to cut close to them', async (t) => {
  t.same(httpServerTimeouts(DEFAULT_LISTENER_TIMEOUTS), { headersTimeout: 10_000, requestTimeout: 30_000, keepAliveTimeout: 5_000, connectionsCheckingInterval: 1_000 })
  t.equal(httpServerTimeouts({ headersMs: 2_000, requestMs: 3_000, keepAliveMs: 5_000 }).connectionsCheckingInterval, 200, 'a tenth of the shortest')
  t.equal(httpServerTimeouts({ headersMs: 100, requestMs: 100, keepAliveMs: 100 }).connectionsCheckingInterval, 50, 'never below 50 ms')
})
