import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { Redis } from 'ioredis'
import { assertProblem, assertStatus } from '../helpers/assert.js'
import { adminClient, type HttpAnswer } from '../helpers/http.js'
import { fakeClock, startIdentity, tempDir, type FakeClock, type TestIdentity } from '../helpers/identity.js'
import { startRedis, type TestRedis } from '../helpers/redis.js'
import { postLogin } from '../helpers/session-setup.js'

/**
 * With Redis configured, identity counts failed logins on the traffic-control engine in
 * Redis: the counts outlive the identity process (a restart, a redeploy) and a success
 * clears the e-mail's count there. Without Redis they stay in process (a restart
 * forgets them). If Redis goes away, the throttle keeps counting in process.
 *
 * E-mails and client networks are fresh per run: with REDIS_URL set, the Redis may be
 * shared with other suites.
 */

const WINDOW_SECONDS = 900
const PASSWORD = 'a long enough password'

interface Node { identity: TestIdentity, login: (email: string, password: string) => Promise<HttpAnswer> }

const unique = (): string => randomBytes(4).toString('hex')

/** An IPv6 /64 of its own, as identity names it (groups without leading zeros). */
const freshNetwork = (): string => `2001:db8:${parseInt(unique().slice(0, 4), 16).toString(16)}:${parseInt(unique().slice(0, 4), 16).toString(16)}`

/** A client in a network of its own (identity trusts loopback, so the test names the client). */
const freshClient = (): string => `${freshNetwork()}::1`

/** Identity on `databasePath` and the fake clock, with the throttle's limits; logins come from `client`. */
async function startNode (t: Test, options: { redis: TestRedis | null, databasePath: string, clock: FakeClock, client: string, perEmail?: number, perIp?: number }): Promise<Node> {
  const identity = await startIdentity(t, {
    ...(options.redis !== null ? { REDIS_URL: options.redis.url } : {}),
    IDENTITY_TRUST_PROXY: 'loopback',
    IDENTITY_LOGIN_MAX_FAILURES_PER_EMAIL: String(options.perEmail ?? 3),
    IDENTITY_LOGIN_MAX_FAILURES_PER_IP: String(options.perIp ?? 100),
    IDENTITY_LOGIN_THROTTLE_WINDOW_SECONDS: String(WINDOW_SECONDS)
  }, { clock: options.clock, databasePath: options.databasePath })
  return {
    identity,
    login: async (email, password) => await postLogin(identity, { email, password }, { 'x-forwarded-for': options.client })
  }
}

async function createUser (t: Test, node: Node, email: string): Promise<void> {
  const admin = adminClient(node.identity.adminUrl, node.identity.adminToken)
  assertStatus(t, await admin('POST', '/admin/users', { email, password: PASSWORD, roles: [] }), 201, 'user created')
}

/** Stops one identity (its database and Redis stay) and starts another on them. */
async function restart (t: Test, node: Node, options: Parameters<typeof startNode>[1]): Promise<Node> {
  await node.identity.identity.close()
  return await startNode(t, options)
}

function redisClient (t: Test, redis: TestRedis): Redis {
  const client = new Redis(redis.url, { maxRetriesPerRequest: 1 })
  t.teardown(() => { client.disconnect() })
  return client
}

/** The traffic-control keys of one login count (`login|email|…` or `login|ip|…`). */
async function countKeys (client: Redis, id: string): Promise<string[]> {
  return (await client.keys(`portier:tc:{${id}}*`))
}

function assertThrottled (t: Test, answer: HttpAnswer, retryAfter: number, label: string): void {
  assertProblem(t, answer, 429, 'login_throttled', label)
  t.equal(answer.headers['retry-after'], String(retryAfter), `${label}: Retry-After`)
}

t.test('with Redis', async (t) => {
  const redis = await startRedis(t)
  const client = redisClient(t, redis)

  t.test('security: failures recorded by one identity still count after a restart (per e-mail)', async (t) => {
    const clock = fakeClock()
    const email = `ada-${unique()}@example.com`
    const options = { redis, databasePath: join(tempDir(t), 'identity.db'), clock, client: freshClient() }
    let node = await startNode(t, options)
    await createUser(t, node, email)
    for (let i = 0; i < 2; i++) assertProblem(t, await node.login(email, 'wrong password'), 401, 'invalid_credentials')
    t.equal((await countKeys(client, `login|email|${email}`)).length, 1, 'the e-mail\'s failures are in Redis')

    node = await restart(t, node, options)
    clock.advance(60_000)
    assertProblem(t, await node.login(email, 'wrong password'), 401, 'invalid_credentials', 'the third failure, on the new process')
    assertThrottled(t, await node.login(email, PASSWORD), WINDOW_SECONDS - 60, 'the two before the restart count: 429, right password')

    node = await restart(t, node, options)
    assertThrottled(t, await node.login(email, PASSWORD), WINDOW_SECONDS - 60, 'and after another restart')
    clock.advance((WINDOW_SECONDS - 60) * 1000)
    assertStatus(t, await node.login(email, PASSWORD), 201, 'once they left the window')
  })

  t.test('security: failures recorded by one identity still count after a restart (per IP)', async (t) => {
    const clock = fakeClock()
    const options = { redis, databasePath: join(tempDir(t), 'identity.db'), clock, client: freshClient(), perEmail: 100, perIp: 3 }
    let node = await startNode(t, options)
    const email = `ada-${unique()}@example.com`
    await createUser(t, node, email)
    for (let i = 0; i < 2; i++) assertProblem(t, await node.login(`nobody${i}-${unique()}@example.com`, 'wrong password'), 401, 'invalid_credentials')
    node = await restart(t, node, options)
    assertProblem(t, await node.login(`nobody-${unique()}@example.com`, 'wrong password'), 401, 'invalid_credentials')
    assertThrottled(t, await node.login(email, PASSWORD), WINDOW_SECONDS, 'the network\'s three failures, across the restart')
  })

  t.test('happy: a success clears the e-mail\'s count in Redis, not the IP\'s', async (t) => {
    const clock = fakeClock()
    const network = freshNetwork()
    const options = { redis, databasePath: join(tempDir(t), 'identity.db'), clock, client: `${network}::1` }
    let node = await startNode(t, options)
    const email = `ada-${unique()}@example.com`
    await createUser(t, node, email)
    for (let i = 0; i < 2; i++) assertProblem(t, await node.login(email, 'wrong password'), 401, 'invalid_credentials')
    t.equal((await countKeys(client, `login|email|${email}`)).length, 1, 'two failures counted in Redis')
    assertStatus(t, await node.login(email, PASSWORD), 201, 'the right password')
    t.same(await countKeys(client, `login|email|${email}`), [], 'the e-mail\'s count is gone from Redis')
    t.equal((await countKeys(client, `login|ip|${network}::/64`)).length, 1, 'the network\'s count stays')

    node = await restart(t, node, options)
    for (let i = 0; i < 2; i++) assertProblem(t, await node.login(email, 'wrong password'), 401, 'invalid_credentials', 'counting starts again')
    assertStatus(t, await node.login(email, PASSWORD), 201, 'two failures since the success: still below the limit')
  })

  t.test('security: 20 concurrent wrong passwords for one e-mail run 3 checks with the count in Redis', async (t) => {
    const clock = fakeClock()
    const node = await startNode(t, { redis, databasePath: join(tempDir(t), 'identity.db'), clock, client: freshClient() })
    const email = `ada-${unique()}@example.com`
    await createUser(t, node, email)
    const answers = await Promise.all(Array.from({ length: 20 }, async (_, i) => await node.login(email, `wrong password ${i}`)))
    t.same([answers.filter((a) => a.status === 401).length, answers.filter((a) => a.status === 429).length], [3, 17])
  })
})

t.test('without Redis: the count is in process, and a restart forgets it', async (t) => {
  const clock = fakeClock()
  const options = { redis: null, databasePath: join(tempDir(t), 'identity.db'), clock, client: freshClient() }
  let node = await startNode(t, options)
  const email = `ada-${unique()}@example.com`
  await createUser(t, node, email)
  for (let i = 0; i < 3; i++) assertProblem(t, await node.login(email, 'wrong password'), 401, 'invalid_credentials')
  assertThrottled(t, await node.login(email, PASSWORD), WINDOW_SECONDS, 'throttled in this process')
  node = await restart(t, node, options)
  assertStatus(t, await node.login(email, PASSWORD), 201, 'a new process starts from nothing')
})

t.test('Redis lost mid-way: the throttle keeps counting in process and logins keep being answered', async (t) => {
  const redis = await startRedis(t)
  if (!redis.private) {
    t.pass('REDIS_URL is shared: the suite may not stop it, so the outage is not played')
    return
  }
  const clock = fakeClock()
  const node = await startNode(t, { redis, databasePath: join(tempDir(t), 'identity.db'), clock, client: freshClient() })
  const email = `ada-${unique()}@example.com`
  const other = `bob-${unique()}@example.com`
  await createUser(t, node, email)
  await createUser(t, node, other)
  assertProblem(t, await node.login(email, 'wrong password'), 401, 'invalid_credentials', 'counted in Redis')
  await redis.stop()
  for (let i = 0; i < 3; i++) assertProblem(t, await node.login(email, 'wrong password'), 401, 'invalid_credentials', 'counted in process')
  assertThrottled(t, await node.login(email, PASSWORD), WINDOW_SECONDS, 'the limit holds without Redis')
  const warnings = node.identity.logs.filter((line) => typeof line.msg === 'string' && line.msg.includes('login failure counts'))
  t.equal(warnings.length, 1, 'one warning for the outage')
  t.equal(warnings[0]?.level, 40, 'at warn level')
  assertStatus(t, await postLogin(node.identity, { email: other, password: PASSWORD }, { 'x-forwarded-for': freshClient() }), 201, 'a right password logs in')
})
