import t, { type Test } from 'tap'
import { WebSocket } from 'ws'
import { startStack, type TestGateway } from '../helpers/gateway.js'
import { pollUntil } from '../helpers/gateway-auth.js'
import { assertStatus } from '../helpers/assert.js'

/**
 * A key with an owner, at the gateways: it may do what both it and its owner may, and
 * works only while its owner is active. A change of the owner's roles, of a role's
 * permissions, or the owner disabled or enabled reaches every gateway within a second
 * through identity's events (each of the owner's keys announced as updated), long
 * before the caches' own TTLs (set to five minutes here, so only the events can do
 * it). Two gateways on one real Redis, as two replicas would run.
 */

const WITHIN_MS = 1_000
const LONG_CACHES = { keyCache: { l1TtlSeconds: 300, l2TtlSeconds: 300 } }

interface Answer { status: number, code: unknown }

async function answersOf (gateways: readonly TestGateway[], key: string, path: string): Promise<Answer[]> {
  return await Promise.all(gateways.map(async (gateway) => {
    const answer = await gateway.call(path, { headers: { 'x-api-key': key } })
    return { status: answer.status, code: answer.body?.code }
  }))
}

/** Makes `change`, then waits until every gateway answers `path` with `status`: asserts it took at most a second. */
async function changeReaches (t: Test, gateways: readonly TestGateway[], key: string, change: () => Promise<void>,
  expected: Array<[path: string, status: number]>, label: string): Promise<void> {
  const since = performance.now()
  await change()
  let seen: Array<[string, Answer[]]> = []
  const ms = await pollUntil(async () => {
    seen = await Promise.all(expected.map(async ([path]) => [path, await answersOf(gateways, key, path)] as [string, Answer[]]))
    return seen.every(([, answers], i) => answers.every((answer) => answer.status === expected[i]?.[1]))
  }, { since, timeoutMs: 5_000, intervalMs: 20 })
  t.ok(ms !== null && ms <= WITHIN_MS, `${label}: at both gateways in ${ms ?? 'more than 5000'} ms`, { seen })
}

t.test('a key bounded by its owner, at every gateway within a second', async (t) => {
  const s = await startStack(t, { roles: { reader: ['users:list', 'debug:read'], tasker: ['tasks:list'] }, gateway: LONG_CACHES })
  const gateways = [s.gateway, await s.addGateway()]
  const owned = await s.createKey(['users:*', 'tasks:list', 'debug:read'], { owner_user_id: s.userId })
  const unowned = await s.createKey(['tasks:list'])
  const statuses = async (key: string, path: string): Promise<number[]> => (await answersOf(gateways, key, path)).map((a) => a.status)

  t.same(await statuses(owned.key, '/users?per_page=1'), [200, 200], 'the owner may list users: so may the key, at both')
  t.same(await statuses(owned.key, '/tasks'), [200, 200], 'and list tasks')
  t.same(await answersOf(gateways, owned.key, '/users/1'), [{ status: 403, code: 'permission_denied' }, { status: 403, code: 'permission_denied' }],
    'users:read: the key\'s users:* allows it, its owner does not hold it')

  await changeReaches(t, gateways, owned.key, async () => {
    assertStatus(t, await s.admin('PUT', `/admin/users/${s.userId}/roles`, { roles: ['reader'] }), 200, 'the role tasker taken from the owner')
  }, [['/tasks', 403], ['/users?per_page=1', 200]], 'a role removed from the owner: 403 for what only it allowed, 200 for the rest')
  t.same(await statuses(unowned.key, '/tasks'), [200, 200], 'a key of its own is not concerned')

  await changeReaches(t, gateways, owned.key, async () => {
    assertStatus(t, await s.admin('PUT', '/admin/roles/reader', { permissions: ['users:list', 'users:read', 'debug:read'] }), 200, 'users:read added to the role')
  }, [['/users/1', 200]], 'a role\'s permissions changed')

  const socket = new WebSocket(`${gateways[1]?.url.replace(/^http/, 'ws') ?? ''}/ws/echo`, { headers: { 'x-api-key': owned.key } })
  t.teardown(() => { socket.terminate() })
  await new Promise((resolve, reject) => { socket.once('open', resolve); socket.once('error', reject) })
  const socketClosed = new Promise<{ code: number, at: number }>((resolve) => { socket.once('close', (code) => { resolve({ code, at: performance.now() }) }) })

  const disabledAt = performance.now()
  await changeReaches(t, gateways, owned.key, async () => {
    assertStatus(t, await s.admin('POST', `/admin/users/${s.userId}/disable`), 200, 'owner disabled')
  }, [['/users?per_page=1', 401]], 'the owner disabled: the key is refused')
  const refused = await gateways[0]?.call('/users?per_page=1', { headers: { 'x-api-key': owned.key } })
  t.match(refused?.body, { code: 'invalid_api_key', detail: 'The API key is disabled.' }, 'as a disabled key is: the 401 problem of the contract')
  t.match(refused?.headers['www-authenticate'], /invalid_token/, 'with the challenge')
  const closed = await socketClosed
  t.equal(closed.code, 1008, 'its open WebSocket closed (policy violation)')
  t.ok(closed.at - disabledAt <= WITHIN_MS, `within a second (${Math.round(closed.at - disabledAt)} ms)`)

  await changeReaches(t, gateways, owned.key, async () => {
    assertStatus(t, await s.admin('POST', `/admin/users/${s.userId}/enable`), 200, 'owner enabled')
  }, [['/users?per_page=1', 200], ['/users/1', 200], ['/tasks', 403]], 'the owner enabled again: the key works again, still within the owner\'s permissions')
})
