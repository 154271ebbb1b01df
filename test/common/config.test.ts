import t, { type Test } from 'tap'
import { Type } from 'typebox'
import { validateConfig } from '../../common/config.js'
import { loadGatewayConfig } from '../../gateway/config.js'
import { loadIdentityCliConfig, loadIdentityConfig } from '../../identity/config.js'
import { loadUpstreamMockConfig } from '../../upstream-mock/config.js'
import { WITH_SIGNING_KEY_ENCRYPTION } from '../helpers/signing-key-encryption.js'

/**
 * A resolved configuration is read by every part of its service: it is deep-frozen, so
 * a write to any nested field throws (these modules are strict) and changes nothing.
 */

function assertFrozen (t: Test, label: string, change: () => void, read: () => unknown): void {
  const before = JSON.stringify(read())
  t.throws(change, TypeError, `${label}: the write throws`)
  t.equal(JSON.stringify(read()), before, `${label}: unchanged`)
}

const TOKENS = { IDENTITY_ADMIN_TOKEN: 'a'.repeat(32), IDENTITY_SERVICE_TOKEN: 's'.repeat(32), ...WITH_SIGNING_KEY_ENCRYPTION }
/** A configuration as code that ignores its Readonly type would see it. */
type Writable = Record<string, any>

t.test('validateConfig: nested options too', async (t) => {
  const schema = Type.Object({ cache: Type.Object({ ttl: Type.Integer({ default: 5 }) }, { default: {} }), names: Type.Array(Type.String(), { default: [] }) })
  const raw = { names: ['a'] }
  const resolved = validateConfig<{ cache: { ttl: number }, names: string[] }>(schema, raw, 'test') as Writable
  assertFrozen(t, 'a default object', () => { resolved.cache.ttl = 6 }, () => resolved.cache)
  assertFrozen(t, 'a list', () => { resolved.names.push('b') }, () => resolved.names)
})

t.test('the gateway: server settings and the plugin options it builds', async (t) => {
  const config = loadGatewayConfig({ ...TOKENS, GATEWAY_ALLOWED_UNUSUAL_HEADERS: 'x_a', REDIS_CLUSTER_NODES: '127.0.0.1:7000' }) as Writable
  assertFrozen(t, 'plugin.identity.timeoutMs', () => { config.plugin.identity.timeoutMs = 1 }, () => config.plugin.identity)
  assertFrozen(t, 'plugin.keyCache.l1TtlSeconds', () => { config.plugin.keyCache.l1TtlSeconds = 1 }, () => config.plugin.keyCache)
  assertFrozen(t, 'plugin.allowedUnusualHeaders', () => { config.plugin.allowedUnusualHeaders.push('x_b') }, () => config.plugin.allowedUnusualHeaders)
  assertFrozen(t, 'plugin.redisClusterNodes', () => { config.plugin.redisClusterNodes[0] = 'elsewhere:1' }, () => config.plugin.redisClusterNodes)
  assertFrozen(t, 'metrics.port', () => { config.metrics.port = 1 }, () => config.metrics)
  assertFrozen(t, 'timeouts.headersMs', () => { config.timeouts.headersMs = 1 }, () => config.timeouts)
})

t.test('identity, server and CLI', async (t) => {
  const config = loadIdentityConfig({ ...TOKENS, REDIS_CLUSTER_NODES: '127.0.0.1:7000' }) as Writable
  assertFrozen(t, 'argon2.memoryCost', () => { config.argon2.memoryCost = 1 }, () => config.argon2)
  assertFrozen(t, 'loginThrottle.enabled', () => { config.loginThrottle.enabled = false }, () => config.loginThrottle)
  assertFrozen(t, 'redis.nodes', () => { config.redis.nodes[0].port = 1 }, () => config.redis)
  const cli = loadIdentityCliConfig(WITH_SIGNING_KEY_ENCRYPTION) as Writable
  assertFrozen(t, 'CLI timeouts.requestMs', () => { cli.timeouts.requestMs = 1 }, () => cli.timeouts)
})

t.test('upstream-mock', async (t) => {
  const config = loadUpstreamMockConfig({}) as Writable
  assertFrozen(t, 'timeouts.keepAliveMs', () => { config.timeouts.keepAliveMs = 1 }, () => config.timeouts)
  assertFrozen(t, 'users', () => { config.users = 1 }, () => config.users)
})
