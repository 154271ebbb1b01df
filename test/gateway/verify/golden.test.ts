import t from 'tap'
import { assertStatus } from '../../helpers/assert.js'
import { pollUntil } from '../../helpers/gateway-auth.js'
import { SHAPES, startVerifyStack, type Shape } from './verify-stack.js'

/**
 * One decision, every shape: each row is a credential in a state, asked about one
 * request in JSON, nginx's, forward auth's and Envoy's shapes. Every shape gives the
 * row's code, the status its proxy needs for it, and the status matches what the
 * gateway answers the same request proxied, so the verify API can never allow what the
 * gateway would refuse, nor the other way round.
 */

const iso = (ms: number): string => new Date(ms).toISOString()

/** What a proxy shape answers a deny with: the problem's status, or for nginx auth_request only 401 or 403. */
function expectedStatus (shape: Shape, problemStatus: number): number {
  if (shape === 'json' || problemStatus === 200) return 200
  if (shape === 'nginx') return problemStatus === 401 ? 401 : 403
  return problemStatus
}

t.test('every shape gives the same decision as the gateway', async (t) => {
  const s = await startVerifyStack(t, { roles: { reader: ['users:list'] } })
  const valid = await s.createKey(['users:list'])
  const other = await s.createKey(['tasks:list'])
  const revoked = await s.createKey(['users:list'])
  const disabled = await s.createKey(['users:list'])
  const expiring = await s.createKey(['users:list'], { expires_at: iso(s.clock.now() + 60_000) })
  const limited = await s.createKey(['users:list'], { policies: [{ name: 'one-a-minute', kind: 'rate', limit: 1, window_seconds: 600, partition: 'key' }] })
  const metered = await s.createKey(['users:list'], { policies: [{ name: 'just-one', kind: 'quota', limit: 1, period: 'never', partition: 'key' }] })

  assertStatus(t, await s.admin('POST', `/admin/keys/${revoked.id}/revoke`), 200, 'revoked')
  assertStatus(t, await s.admin('POST', `/admin/keys/${disabled.id}/disable`), 200, 'disabled')
  // Each limit's one unit is taken by a first question: every question after is over it.
  t.equal((await s.ask('json', 'GET', '/users', { 'x-api-key': limited.key })).code, 'VALID', 'the rate limit\'s one unit, taken by a verify')
  t.equal((await s.ask('json', 'GET', '/users', { 'x-api-key': metered.key })).code, 'VALID', 'the quota\'s one unit, taken by a verify')
  s.clock.advance(61_000)

  const rows: Array<{ name: string, path?: string, credential: Record<string, string>, code: string, status: number, keyId: string | null }> = [
    { name: 'valid key', credential: { 'x-api-key': valid.key }, code: 'VALID', status: 200, keyId: valid.id },
    { name: 'unknown key', credential: { 'x-api-key': 'pk_live_not-a-key-at-all' }, code: 'NOT_FOUND', status: 401, keyId: null },
    { name: 'no credential', credential: {}, code: 'NOT_FOUND', status: 401, keyId: null },
    { name: 'key without the permission', credential: { 'x-api-key': other.key }, code: 'INSUFFICIENT_PERMISSIONS', status: 403, keyId: other.id },
    { name: 'revoked key', credential: { 'x-api-key': revoked.key }, code: 'REVOKED', status: 401, keyId: null },
    { name: 'expired key', credential: { 'x-api-key': expiring.key }, code: 'EXPIRED', status: 401, keyId: null },
    { name: 'disabled key', credential: { 'x-api-key': disabled.key }, code: 'DISABLED', status: 401, keyId: null },
    { name: 'rate-limited key', credential: { 'x-api-key': limited.key }, code: 'RATE_LIMITED', status: 429, keyId: limited.id },
    { name: 'quota used up', credential: { 'x-api-key': metered.key }, code: 'USAGE_EXCEEDED', status: 429, keyId: metered.id },
    { name: 'no route for the path', path: '/nowhere', credential: { 'x-api-key': valid.key }, code: 'FORBIDDEN', status: 404, keyId: null }
  ]
  for (const row of rows) {
    const path = row.path ?? '/users'
    for (const shape of SHAPES) {
      const { code, status, answer } = await s.ask(shape, 'GET', path, row.credential)
      t.equal(code, row.code, `${row.name}, ${shape}: ${row.code}`)
      t.equal(status, expectedStatus(shape, row.status), `${row.name}, ${shape}: status ${expectedStatus(shape, row.status)}`)
      if (shape === 'json') {
        t.equal(answer.body.valid, row.code === 'VALID', `${row.name}: valid is ${String(row.code === 'VALID')}`)
        t.equal(answer.body.key_id, row.keyId, `${row.name}: key_id`)
      } else {
        t.equal(answer.headers['x-portier-principal'], row.keyId ?? '', `${row.name}, ${shape}: X-Portier-Principal, empty when no key is known`)
        for (const name of ['x-portier-principal-type', 'x-portier-permissions', 'x-portier-user']) t.ok(name in answer.headers, `${row.name}, ${shape}: ${name} is always sent`)
      }
      t.equal(answer.headers['cache-control'], 'no-store', `${row.name}, ${shape}: no-store`)
    }
    const proxied = await s.gateway.call(path, { headers: row.credential })
    t.equal(proxied.status, row.status, `${row.name}: the gateway answers the request itself ${row.status}`)
  }
})

t.test('an allow names the principal, a rate limit is charged and reported, a revocation reaches within 1 s', async (t) => {
  const s = await startVerifyStack(t, { roles: { reader: ['users:list'] } })
  const key = await s.createKey(['users:list', 'users:read'], { policies: [{ name: 'three', kind: 'rate', limit: 3, window_seconds: 600, partition: 'key' }] })
  const allow = await s.ask('forward-auth', 'GET', '/users/7', { 'x-api-key': key.key })
  assertStatus(t, allow.answer, 200, 'allowed')
  t.equal(allow.answer.headers['x-portier-principal'], key.id, 'X-Portier-Principal is the key')
  t.equal(allow.answer.headers['x-portier-principal-type'], 'key', 'of type key')
  t.equal(allow.answer.headers['x-portier-permissions'], 'users:list,users:read', 'with its permissions, as the gateway forwards them')
  t.equal(allow.answer.headers['x-portier-user'], '', 'and no user: an operator\'s key belongs to none (sent empty)')
  t.match(allow.answer.headers.ratelimit, /"three";r=2;/, 'the RateLimit field says 2 are left')

  const json = await s.ask('json', 'GET', '/users', { 'x-api-key': key.key })
  t.same(json.answer.body, { valid: true, code: 'VALID', reason: null, key_id: key.id, user_id: null, permissions: ['users:list', 'users:read'], ratelimit: { name: 'three', limit: 3, remaining: 1, reset: json.answer.body.ratelimit.reset } }, 'the JSON answer, one unit left')
  const proxied = await s.gateway.call('/users', { headers: { 'x-api-key': key.key } })
  assertStatus(t, proxied, 200, 'the proxied request takes the last unit: one count for both')
  const over = await s.ask('json', 'GET', '/users', { 'x-api-key': key.key })
  t.match(over.answer.body, { valid: false, code: 'RATE_LIMITED', reason: 'rate_limited', key_id: key.id, ratelimit: { name: 'three', remaining: 0 } }, 'the fourth is refused')
  const nginx = await s.ask('nginx', 'GET', '/users', { 'x-api-key': key.key })
  t.equal(nginx.status, 403, 'nginx is told 403, never a status it turns into a 500')
  t.equal(nginx.answer.headers['x-portier-verify-code'], 'RATE_LIMITED', 'with the reason beside it')
  t.ok(Number(nginx.answer.headers['retry-after']) > 0, 'and Retry-After')

  const fresh = await s.createKey(['users:list'])
  t.equal((await s.ask('json', 'GET', '/users', { 'x-api-key': fresh.key })).code, 'VALID', 'a key verified (and cached) before its revocation')
  assertStatus(t, await s.admin('POST', `/admin/keys/${fresh.id}/revoke`), 200, 'revoked through the identity admin API')
  const since = performance.now()
  const waited = await pollUntil(async () => (await s.ask('json', 'GET', '/users', { 'x-api-key': fresh.key })).code === 'REVOKED', { since, timeoutMs: 1_000 })
  t.not(waited, null, `the verify answer says REVOKED within 1 s (${String(waited)} ms)`)
})
