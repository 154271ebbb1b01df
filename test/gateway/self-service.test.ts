import t from 'tap'
import { assertJson, assertProblem, assertStatus } from '../helpers/assert.js'
import { startStack } from '../helpers/gateway.js'
import { assertRefused, pollUntil } from '../helpers/gateway-auth.js'
import { ADA, sidOf } from '../helpers/session-setup.js'
import { DAY_MS } from '../helpers/self-service.js'

/**
 * Self-service through the gateway's one base URL, over real sockets, with real
 * identity, Redis and upstream-mock: a user logs in, reads /me, makes a key and uses it
 * on an upstream, rotates it at once (the old secret refused, the new one let through),
 * sees its usage, revokes it, and ends their other sessions (whose tokens the gateway
 * then refuses). An API key opens none of it.
 */

const iso = (ms: number): string => new Date(ms).toISOString()

t.test('the self-service flow through the gateway', async (t) => {
  const s = await startStack(t, { roles: { reader: ['users:list', 'users:read', 'tasks:list'] }, gateway: { keyUsageFlushSeconds: 0.2 } })
  const { gateway } = s
  const login = await gateway.call('/sessions', { body: { session: ADA } })
  assertJson(t, login, 201, 'login through the gateway')
  const bearer = login.body.access_token as string
  const me = async (method: string, path: string, body?: unknown) => await gateway.call(path, { method, bearer, ...(body !== undefined ? { body } : {}) })

  const profile = await me('GET', '/me')
  assertJson(t, profile, 200, 'GET /me through the gateway')
  t.match(profile.body, { user: { id: s.userId, email: ADA.email, roles: ['reader'] }, permissions: ['tasks:list', 'users:list', 'users:read'] })
  t.equal(profile.headers['cache-control'], 'no-store')

  const made = await me('POST', '/me/keys', { name: 'reports', permissions: ['users:list'], expires_at: iso(s.clock.now() + 30 * DAY_MS) })
  assertJson(t, made, 201, 'a key of my own')
  t.equal(made.headers['cache-control'], 'no-store', 'the answer with the key is not cached')
  const first = made.body.key as string
  const keyId = made.body.api_key.id as string
  t.match(made.body.api_key, { name: 'reports', origin: 'self_service', owner_user_id: s.userId })

  const used = await gateway.call('/users?per_page=2', { headers: { 'x-api-key': first } })
  assertJson(t, used, 200, 'the key works on an upstream')
  t.equal(used.headers['x-upstream-principal'], keyId, 'the upstream sees the key as principal')
  assertProblem(t, await gateway.call('/tasks', { headers: { 'x-api-key': first } }), 403, 'permission_denied', 'and only for what it was given')

  for (const [path, init] of [['/me', {}], ['/me/keys', {}], [`/me/keys/${keyId}`, {}], [`/me/keys/${keyId}/rotate`, { method: 'POST', body: { grace_seconds: 0 } }],
    [`/me/keys/${keyId}/revoke`, { method: 'POST' }], ['/me/sessions', {}], ['/me/sessions/revoke-others', { method: 'POST' }]] as const) {
    const answer = await gateway.call(path, { ...init, headers: { 'x-api-key': first } })
    assertProblem(t, answer, 401, 'credentials_missing', `${path}: an API key opens no self-service route`)
    const beside = await gateway.call(path, { ...init, bearer, headers: { 'x-api-key': first } })
    assertProblem(t, beside, 401, 'credentials_missing', `${path}: nor beside a valid Bearer`)
    t.same(beside.body, answer.body, `${path}: answered as no credential`)
  }
  assertJson(t, await gateway.call('/users', { headers: { 'x-api-key': first } }), 200, 'nor did those attempts change the key')

  const rotated = await me('POST', `/me/keys/${keyId}/rotate`, { grace_seconds: 0 })
  assertJson(t, rotated, 200, 'rotation with no grace')
  const second = rotated.body.key as string
  t.not(second, first)
  const oldRefused = await pollUntil(async () => (await gateway.call('/users', { headers: { 'x-api-key': first } })).status === 401)
  t.not(oldRefused, null, 'the gateway soon refuses the old secret')
  assertRefused(t, await gateway.call('/users', { headers: { 'x-api-key': first } }), 'invalid_api_key', 'the old secret')
  assertJson(t, await gateway.call('/users', { headers: { 'x-api-key': second } }), 200, 'the new secret works')

  const reported = await pollUntil(async () => {
    const usage = await me('GET', `/me/keys/${keyId}/usage`)
    return usage.status === 200 && usage.body.totals.allowed >= 3 && usage.body.totals.forbidden >= 1
  })
  t.not(reported, null, 'the key\'s usage, as the gateway reported it, through the gateway')

  const listed = await me('GET', '/me/keys')
  assertJson(t, listed, 200)
  t.match(listed.body.api_keys, [{ id: keyId, name: 'reports', last_used_route: '/users' }], 'the last use is shown')
  t.notOk(listed.text.includes(second.slice(-20)), 'never the secret')

  const revoked = await me('POST', `/me/keys/${keyId}/revoke`)
  assertJson(t, revoked, 200, 'revocation')
  t.equal(revoked.body.api_key.status, 'revoked')
  t.not(await pollUntil(async () => (await gateway.call('/users', { headers: { 'x-api-key': second } })).status === 401), null,
    'the gateway soon refuses the revoked key')

  const phone = await gateway.call('/sessions', { body: { session: ADA }, headers: { 'user-agent': 'Phone/2.0' } })
  assertJson(t, await gateway.call('/users', { bearer: phone.body.access_token }), 200, 'another session works')
  const sessions = await me('GET', '/me/sessions')
  t.same(sessions.body.sessions.filter((x: { current: boolean }) => x.current).map((x: { id: string }) => x.id), [sidOf(bearer)], 'this one is current')
  t.equal(sessions.body.sessions.length, 2, 'of two')
  t.same((await me('POST', '/me/sessions/revoke-others')).body, { revoked: 1 })
  t.not(await pollUntil(async () => (await gateway.call('/users', { bearer: phone.body.access_token })).status === 401), null,
    'the gateway soon refuses the ended session\'s token')
  assertJson(t, await me('GET', '/me'), 200, 'this session goes on')
  assertStatus(t, await gateway.call('/me/unknown', { bearer }), 404, 'only identity\'s self-service routes are routed')
})
