import t from 'tap'
import { startWithUser } from '../helpers/session-setup.js'
import { http } from '../helpers/http.js'
import { assertJson, assertProblem, assertStatus } from '../helpers/assert.js'
import { iso } from '../helpers/identity.js'
import type { AuditRecordView } from '../../identity/services/audit.js'

/**
 * Reading the audit trail over /admin/audit: what each record holds and who it names,
 * filters, cursor paging in both orders, the NDJSON export, and the routes' place in
 * the admin OpenAPI document.
 */

const DAY_MS = 86_400_000
type Records = AuditRecordView[]

t.test('records: the admin token, a user logging in and out, refused attempts, nothing secret', async (t) => {
  const s = await startWithUser(t)
  const list = async (query: string): Promise<Records> => {
    const answer = await s.admin('GET', `/admin/audit?${query}`)
    assertJson(t, answer, 200, `GET /admin/audit?${query}`)
    return answer.body.records as Records
  }

  const [userCreated] = await list('action=user.create')
  t.match(userCreated, {
    seq: Number,
    id: /^aud_/,
    at: iso(s.clock.now()),
    action: 'user.create',
    outcome: 'success',
    error_code: null,
    actor: { type: 'admin_token', id: 'bootstrap' },
    source: { ip: '127.0.0.1', user_agent: String, request_id: String },
    target: { type: 'user', id: s.userId, name: s.user.email },
    changes: { after: { email: s.user.email, roles: ['reader'], status: 'active' } },
    prev_hash: /^[0-9a-f]{64}$/,
    hash: /^[0-9a-f]{64}$/
  })
  t.notOk(JSON.stringify(userCreated).includes(s.user.password), 'no password in the record')

  // Logins: the user is the actor when the e-mail names one.
  const tokens = await s.login()
  assertStatus(t, await s.loginAs({ email: s.user.email, password: 'not the password' }), 401)
  assertStatus(t, await s.loginAs({ email: 'Nobody@Example.com', password: 'whatever-it-is' }), 401)
  const typedIntoTheWrongBox = 'correct-horse-battery-staple'
  assertStatus(t, await s.loginAs({ email: typedIntoTheWrongBox, password: 'x' }), 401)
  const logins = await list('action=login&order=oldest')
  t.match(logins, [
    { outcome: 'success', error_code: null, actor: { type: 'user', id: s.userId }, target: { type: 'user', id: s.userId, name: s.user.email }, changes: null },
    { outcome: 'failure', error_code: 'invalid_credentials', actor: { type: 'user', id: s.userId }, target: { id: s.userId } },
    { outcome: 'failure', error_code: 'invalid_credentials', actor: { type: 'anonymous', id: null }, target: { type: 'user', id: null, name: 'nobody@example.com' } },
    { outcome: 'failure', error_code: 'invalid_credentials', actor: { type: 'anonymous', id: null }, target: { type: 'user', id: null, name: null } }
  ])
  t.equal(logins.length, 4)
  const everything = JSON.stringify(await list('limit=500'))
  for (const secret of [s.user.password, 'not the password', 'whatever-it-is', typedIntoTheWrongBox, tokens.access_token, tokens.refresh_token]) {
    t.notOk(everything.includes(secret), 'a typed password, a text that is not an e-mail, a token: none is recorded')
  }

  // Logout: the session's user revokes it.
  assertStatus(t, await s.logout(tokens.access_token), 204)
  t.match(await list('action=session.revoke'), [{ actor: { type: 'user', id: s.userId }, target: { type: 'session', id: tokens.sid }, changes: { after: { reason: 'logout' } } }])

  // Refused attempts (409) carry the problem's code.
  assertStatus(t, await s.admin('POST', '/admin/users', { email: s.user.email, password: 'another password', roles: [] }), 409)
  assertStatus(t, await s.admin('DELETE', '/admin/roles/reader'), 409)
  t.match(await list('action=user.create&order=newest&limit=1'), [{ outcome: 'failure', error_code: 'email_taken', target: { type: 'user', id: null, name: s.user.email } }])
  t.match(await list('action=role.remove'), [{ outcome: 'failure', error_code: 'role_in_use', target: { type: 'role', id: 'reader' } }])
})

t.test('filters, cursor paging both ways, NDJSON export', async (t) => {
  const s = await startWithUser(t)
  const keyIds: string[] = []
  for (let i = 0; i < 7; i++) {
    const created = await s.admin('POST', '/admin/keys', { name: `k${i}`, permissions: ['tasks:read'], expires_at: iso(s.clock.now() + 30 * DAY_MS) })
    keyIds.push(created.body.api_key.id as string)
    s.clock.advance(1000)
  }
  const middle = s.clock.now()
  assertStatus(t, await s.admin('POST', `/admin/keys/${keyIds[2] as string}/disable`), 200)
  assertStatus(t, await s.admin('POST', `/admin/keys/${keyIds[2] as string}/revoke`), 200)

  const get = async (query: string) => await s.admin('GET', `/admin/audit?${query}`)
  t.same((await get(`target_type=api_key&target_id=${keyIds[2] as string}&order=oldest`)).body.records.map((r: any) => r.action),
    ['key.create', 'key.disable', 'key.revoke'], 'by target, oldest first')
  t.same((await get(`target_id=${keyIds[2] as string}`)).body.records.map((r: any) => r.action),
    ['key.revoke', 'key.disable', 'key.create'], 'newest first by default')
  t.equal((await get('actor_type=admin_token&actor_id=bootstrap&action=key.create')).body.records.length, 7)
  t.equal((await get('actor_type=system&action=key.create')).body.records.length, 0)
  t.same((await get(`action=key.create&from=${iso(middle - 2500)}`)).body.records.map((r: any) => r.target.name), ['k6', 'k5'], 'from is inclusive')
  t.same((await get(`action=key.create&to=${iso(middle - 6000)}`)).body.records.map((r: any) => r.target.name), ['k0'], 'to is exclusive')

  for (const order of ['newest', 'oldest'] as const) {
    const seen: number[] = []
    let cursor: string | null = null
    let pages = 0
    do {
      const answer: Awaited<ReturnType<typeof get>> = await get(`action=key.create&order=${order}&limit=3${cursor !== null ? `&cursor=${cursor}` : ''}`)
      assertJson(t, answer, 200)
      seen.push(...answer.body.records.map((r: any) => r.seq as number))
      cursor = answer.body.next_cursor
      pages++
    } while (cursor !== null)
    t.equal(pages, 3, `${order}: 7 records in pages of 3`)
    const sorted = [...seen].sort((a, b) => (order === 'newest' ? b - a : a - b))
    t.same(seen, sorted, `${order}: in order, each once`)
    t.equal(new Set(seen).size, 7)
  }
  const first = await get('order=newest&limit=1')
  assertProblem(t, await get(`order=oldest&cursor=${first.body.next_cursor as string}`), 400, 'validation_failed', 'a cursor of the other order')
  assertProblem(t, await get('cursor=bm90LWEtY3Vyc29y'), 400, 'validation_failed', 'a cursor this API never gave')
  assertProblem(t, await get('actor_type=robot'), 400, 'validation_failed', 'an unknown actor type')
  assertProblem(t, await get('limit=501'), 400, 'validation_failed', 'a page over 500')

  // NDJSON: every matching record, not one page, by Accept or by format.
  const all = (await get('limit=500&order=oldest')).body.records as Records
  for (const ask of [{ query: '?order=oldest', headers: { accept: 'application/x-ndjson' } }, { query: '?format=ndjson&order=oldest&limit=2', headers: {} }]) {
    const answer = await http(`${s.adminUrl}/admin/audit${ask.query}`, { bearer: s.adminToken, headers: ask.headers })
    assertStatus(t, answer, 200)
    t.equal(answer.headers['content-type'], 'application/x-ndjson')
    const lines = answer.text.trimEnd().split('\n').map((line) => JSON.parse(line))
    t.same(lines, all, 'the export holds every record, each as the JSON listing shows it')
  }
  const filtered = await http(`${s.adminUrl}/admin/audit?format=ndjson&action=key.disable`, { bearer: s.adminToken })
  t.equal(filtered.text.trimEnd().split('\n').length, 1, 'the export takes the filters')
  assertProblem(t, await http(`${s.adminUrl}/admin/audit`, { bearer: s.adminToken, headers: { accept: 'text/html' } }), 406, 'not_acceptable')
  assertProblem(t, await http(`${s.adminUrl}/admin/audit`), 401, 'admin_unauthorized', 'no credential')
})

t.test('the admin OpenAPI document lists the audit routes with their schemas', async (t) => {
  const s = await startWithUser(t)
  const document = (await http(`${s.adminUrl}/openapi.json`)).body
  t.ok(document.tags.some((tag: any) => tag.name === 'audit'), 'the audit tag')
  const list = document.paths['/admin/audit']?.get
  t.match(list, { tags: ['audit'], responses: { 200: { content: { 'application/json': { schema: Object }, 'application/x-ndjson': { schema: Object } } } } })
  t.same(list.parameters.map((p: any) => p.name).sort(),
    ['action', 'actor_id', 'actor_type', 'cursor', 'format', 'from', 'limit', 'order', 'outcome', 'target_id', 'target_type', 'to'])
  t.match(document.paths['/admin/audit/verify']?.get, { tags: ['audit'], responses: { 200: { content: { 'application/json': { schema: { properties: { first_broken_seq: Object } } } } } } })
  t.match(document.paths['/admin/audit/head']?.get, { tags: ['audit'], responses: { 200: Object } })
  t.match(document.paths['/admin/audit/head/verify']?.post, { tags: ['audit'], requestBody: Object, responses: { 200: Object } })
})

t.test('an operator reads the trail with admin:audit; without it, 403 and the refusal is recorded', async (t) => {
  const s = await startWithUser(t, { roles: { auditor: ['admin:audit'], keeper: ['admin:keys'] } })
  const auditor = await s.login()
  const read = await http(`${s.adminUrl}/admin/audit?action=login`, { bearer: auditor.access_token })
  assertJson(t, read, 200, 'admin:audit reads the trail')
  t.match(read.body.records, [{ actor: { type: 'user', id: s.userId } }])
  assertJson(t, await http(`${s.adminUrl}/admin/audit/verify`, { bearer: auditor.access_token }), 200, 'and verifies it')

  assertStatus(t, await s.admin('PUT', `/admin/users/${s.userId}/roles`, { roles: ['keeper'] }), 200)
  assertProblem(t, await http(`${s.adminUrl}/admin/audit/head`, { bearer: auditor.access_token }), 403, 'admin_forbidden', 'admin:keys does not open the trail')
  const refusals = (await s.admin('GET', '/admin/audit?outcome=failure&actor_type=user')).body.records as Records
  t.match(refusals[0], { action: 'admin.access', outcome: 'failure', error_code: 'admin_forbidden', actor: { type: 'user', id: s.userId }, target: { type: 'route', id: 'GET /admin/audit/head' } })
})

t.test('a time range that holds nothing or a time no Date holds: 400, for the page and the export alike, and nothing is recorded', async (t) => {
  const s = await startWithUser(t)
  const count = async (): Promise<number> => (await s.admin('GET', '/admin/audit?limit=500')).body.records.length as number
  const before = await count()
  const at = iso(s.clock.now())
  const later = iso(s.clock.now() + 1000)
  for (const query of [`from=${later}&to=${at}`, `from=${at}&to=${at}`, `format=ndjson&from=${later}&to=${at}`]) {
    const answer = await http(`${s.adminUrl}/admin/audit?${query}`, { bearer: s.adminToken, headers: { accept: 'application/x-ndjson' } })
    assertProblem(t, answer, 400, 'validation_failed', query)
    t.match(answer.body.errors, [{ path: 'querystring/from', message: 'must be before to' }], 'named as a schema violation is')
  }
  // RFC 3339 allows a leap second; no JavaScript Date holds one, and a NaN bound would match nothing, silently.
  assertProblem(t, await s.admin('GET', '/admin/audit?from=2026-12-31T23:59:60Z'), 400, 'validation_failed', 'a leap second')
  assertProblem(t, await s.admin('GET', '/admin/audit?limit=0'), 400, 'validation_failed', 'a page of none')
  assertJson(t, await s.admin('GET', `/admin/audit?from=${at}&to=${later}`), 200, 'a range of a second')
  t.equal(await count(), before, 'reading records nothing')
})
