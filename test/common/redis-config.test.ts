import t from 'tap'
import { Cluster } from 'ioredis'
import { parseRedisTarget } from '../../common/redis-config.js'
import { createRedis } from '../../common/redis.js'
import { loadGatewayConfig } from '../../gateway/config.js'
import { loadIdentityCliConfig, loadIdentityConfig } from '../../identity/config.js'
import { freePort } from '../helpers/redis.js'
import { configProblems } from '../helpers/config-problems.js'
import { WITH_SIGNING_KEY_ENCRYPTION } from '../helpers/signing-key-encryption.js'

/**
 * Where Redis is: REDIS_URL (one server) or REDIS_CLUSTER_NODES (a Redis Cluster's
 * seed nodes), the same two variables for identity, its CLI and the gateway, checked
 * at start with every problem naming the variable.
 */

const GATEWAY = { IDENTITY_SERVICE_TOKEN: 's'.repeat(40) }
const IDENTITY = { IDENTITY_ADMIN_TOKEN: 'a'.repeat(32), IDENTITY_SERVICE_TOKEN: 's'.repeat(32), ...WITH_SIGNING_KEY_ENCRYPTION }

t.test('neither set: no Redis', async (t) => {
  t.same(parseRedisTarget({}), { problems: [] })
  t.equal(loadIdentityConfig(IDENTITY).redis, undefined, 'identity: events in process')
  const gateway = loadGatewayConfig(GATEWAY).plugin
  t.notOk('redisUrl' in gateway || 'redisClusterNodes' in gateway, 'gateway: no Redis option')
})

t.test('REDIS_URL: one server, redis:// or rediss://', async (t) => {
  t.same(parseRedisTarget({ url: 'redis://redis:6379' }).target, { mode: 'standalone', url: 'redis://redis:6379' })
  t.same(parseRedisTarget({ url: 'rediss://:secret@cache.example:6380/2' }).target, { mode: 'standalone', url: 'rediss://:secret@cache.example:6380/2' })
  t.same(loadIdentityConfig({ ...IDENTITY, REDIS_URL: 'redis://127.0.0.1:6379' }).redis, { mode: 'standalone', url: 'redis://127.0.0.1:6379' })
  t.equal(loadGatewayConfig({ ...GATEWAY, REDIS_URL: 'redis://127.0.0.1:6379' }).plugin.redisUrl, 'redis://127.0.0.1:6379')
  for (const bad of ['localhost:6379', 'http://redis:6379', 'redis://a:7000,b:7001']) {
    const problems = parseRedisTarget({ url: bad }).problems
    t.equal(problems.length, 1, `${bad}: one problem`)
    t.match(problems[0], /^REDIS_URL: .* is not a redis:\/\/ or rediss:\/\/ URL \(a Redis Cluster's nodes go in REDIS_CLUSTER_NODES\)$/, `${bad}: names REDIS_URL and points to the cluster variable`)
  }
  const withPassword = parseRedisTarget({ url: 'http://user:hunter2-secret@redis:6379' }).problems.join('\n')
  t.notMatch(withPassword, /hunter2-secret/, 'a refused URL is shown without its password')
})

t.test('REDIS_CLUSTER_NODES: seed nodes as host:port, with spaces, hostnames and IPv6', async (t) => {
  t.same(parseRedisTarget({ clusterNodes: '10.0.0.1:7000, redis-1.cache:7001 ,[::1]:7002' }).target, {
    mode: 'cluster',
    nodes: [{ host: '10.0.0.1', port: 7000 }, { host: 'redis-1.cache', port: 7001 }, { host: '::1', port: 7002 }],
    tls: false
  })
  t.same(parseRedisTarget({ clusterNodes: ['127.0.0.1:7000'] }).target, { mode: 'cluster', nodes: [{ host: '127.0.0.1', port: 7000 }], tls: false }, 'a list (plugin option) reads the same')
})

t.test('REDIS_CLUSTER_NODES: URLs carry credentials and TLS, the same for every node', async (t) => {
  t.same(parseRedisTarget({ clusterNodes: 'rediss://portier:p%40ss@a.cache:7000,rediss://portier:p%40ss@b.cache' }).target, {
    mode: 'cluster',
    nodes: [{ host: 'a.cache', port: 7000 }, { host: 'b.cache', port: 6379 }],
    username: 'portier',
    password: 'p@ss',
    tls: true
  }, 'user, decoded password, TLS, default port 6379')
  t.same(parseRedisTarget({ clusterNodes: 'redis://:only-password@a:7000' }).target, { mode: 'cluster', nodes: [{ host: 'a', port: 7000 }], password: 'only-password', tls: false })
  t.same(parseRedisTarget({ clusterNodes: 'redis://:one@a:7000,redis://:two@b:7000' }).problems,
    ['REDIS_CLUSTER_NODES: every node must have the same scheme (redis:// or rediss://) and credentials'], 'different passwords')
  t.same(parseRedisTarget({ clusterNodes: 'rediss://a:7000,b:7001' }).problems,
    ['REDIS_CLUSTER_NODES: every node must have the same scheme (redis:// or rediss://) and credentials'], 'TLS on one node only')
})

t.test('REDIS_CLUSTER_NODES: every bad node is named by its position, all at once, without credentials', async (t) => {
  const problems = parseRedisTarget({ clusterNodes: 'a:7000,,b,c:0,d:70000,http://e:1,redis://f:7000/1,redis://u:pw-secret@g:x,user:pw-secret2@h:1' }).problems
  t.same(problems, [
    'REDIS_CLUSTER_NODES: node 2 of 9 is empty',
    'REDIS_CLUSTER_NODES: node 3 of 9 ("b") is not host:port or a redis:// URL',
    'REDIS_CLUSTER_NODES: node 4 of 9 ("c:0") is not host:port or a redis:// URL',
    'REDIS_CLUSTER_NODES: node 5 of 9 ("d:70000") is not host:port or a redis:// URL',
    'REDIS_CLUSTER_NODES: node 6 of 9 ("http://e:1") must use redis:// or rediss://',
    'REDIS_CLUSTER_NODES: node 7 of 9 ("redis://f:7000/1") must not name a database: a cluster has only database 0',
    'REDIS_CLUSTER_NODES: node 8 of 9 ("redis://***@g:x") is not a valid URL',
    'REDIS_CLUSTER_NODES: node 9 of 9 ("***@h:1") is not host:port or a redis:// URL'
  ])
  t.notMatch(problems.join('\n'), /pw-secret/, 'no password is shown')
})

t.test('both set: refused, naming both (identity, its CLI and the gateway alike)', async (t) => {
  const both = { REDIS_URL: 'redis://a:6379', REDIS_CLUSTER_NODES: 'a:7000' }
  const expected = ['REDIS_URL and REDIS_CLUSTER_NODES: set one of them, not both (REDIS_CLUSTER_NODES is for a Redis Cluster)']
  t.same(configProblems(() => loadGatewayConfig({ ...GATEWAY, ...both })), expected, 'gateway')
  t.same(configProblems(() => loadIdentityConfig({ ...IDENTITY, ...both })), expected, 'identity')
  t.same(configProblems(() => loadIdentityCliConfig({ ...WITH_SIGNING_KEY_ENCRYPTION, ...both })), expected, 'identity CLI')
})

t.test('a cluster reaches the services: identity and its CLI get the target, the gateway its plugin option', async (t) => {
  const env = { REDIS_CLUSTER_NODES: '127.0.0.1:7000,127.0.0.1:7001' }
  const target = { mode: 'cluster', nodes: [{ host: '127.0.0.1', port: 7000 }, { host: '127.0.0.1', port: 7001 }], tls: false }
  t.same(loadIdentityConfig({ ...IDENTITY, ...env }).redis, target, 'identity')
  t.same(loadIdentityCliConfig({ ...WITH_SIGNING_KEY_ENCRYPTION, ...env }).redis, target, 'identity CLI')
  const gateway = loadGatewayConfig({ ...GATEWAY, ...env }).plugin
  t.same(gateway.redisClusterNodes, ['127.0.0.1:7000', '127.0.0.1:7001'], 'gateway: redisClusterNodes')
  t.notOk('redisUrl' in gateway, 'and no redisUrl')
  t.match(configProblems(() => loadGatewayConfig({ ...GATEWAY, REDIS_CLUSTER_NODES: 'nope' })), [/^REDIS_CLUSTER_NODES: node 1 of 1/], 'gateway: a bad node names the variable')
  t.match(configProblems(() => loadIdentityConfig({ ...IDENTITY, REDIS_CLUSTER_NODES: 'nope', IDENTITY_ARGON2_MEMORY_KIB: '7168' })),
    [/IDENTITY_ARGON2_MEMORY_KIB/, /^REDIS_CLUSTER_NODES: node 1 of 1/], 'identity: reported with the other problems')
})

t.test('a cluster client fails fast while no node answers: no command waits', async (t) => {
  const redis = createRedis({ mode: 'cluster', nodes: [{ host: '127.0.0.1', port: await freePort() }], tls: false })
  redis.on('error', () => {}) // refused: expected
  t.teardown(() => { redis.disconnect() })
  t.ok(redis instanceof Cluster, 'a cluster client')
  const started = performance.now()
  const failure = await redis.get('portier:anything').then(() => null, (err: Error) => err)
  const ms = Math.round(performance.now() - started)
  t.match(failure?.message, /enableOfflineQueue/, `the command is refused, not queued (after ${ms} ms)`)
})
