import t from 'tap'
import { request } from 'undici'
import { http } from '../helpers/http.js'
import { assertJson, assertProblem, assertStatus } from '../helpers/assert.js'
import { startUpstreamMock } from '../helpers/upstream-mock.js'

const PRINCIPAL = { 'x-portier-principal': 'key_01HZX3', 'x-portier-permissions': 'users:list,users:read, tasks:*', 'x-request-id': 'req-42.a:b' }

t.test('happy: /echo answers the request exactly as received', async (t) => {
  const { url } = await startUpstreamMock(t)
  const sent = { accept: 'application/json', 'x-custom-header': 'Mixed Case Value', authorization: 'Bearer not-checked-here', ...PRINCIPAL }
  const answer = await request(`${url}/echo?user_id=7&tag=a&tag=b&empty=`, { headers: sent })
  t.equal(answer.statusCode, 200)
  const echo = await answer.body.json() as Record<string, unknown>
  const host = new URL(url).host
  t.same(echo, {
    method: 'GET',
    path: '/echo',
    search: '?user_id=7&tag=a&tag=b&empty=',
    query: { user_id: '7', tag: ['a', 'b'], empty: '' },
    headers: { host, connection: 'keep-alive', ...sent },
    body: null,
    principal: { id: 'key_01HZX3', permissions: ['users:list', 'users:read', 'tasks:*'] }
  }, 'every header, nothing added or removed (the mock strips nothing: that is the gateway\'s job)')
})

t.test('happy: /echo/* echoes bodies, methods and paths', async (t) => {
  const { url } = await startUpstreamMock(t)
  const body = { firstName: 'Ada', home_address: { streetLine1: 'x' }, list: [1, { nestedKey: null }] }
  for (const method of ['POST', 'PUT', 'PATCH', 'DELETE']) {
    const answer = await http(`${url}/echo/users/7/notes?draft=true`, { method, body })
    assertJson(t, answer, 200, method)
    t.match(answer.body, { method, path: '/echo/users/7/notes', query: { draft: 'true' }, body }, `${method}: the body arrives unchanged`)
    t.same(answer.body.body, body, `${method}: exactly the body sent`)
  }
  const raw = '{"b":1,"a":[true,false,null],"__proto__":{"x":1}}'
  const rawAnswer = await http(`${url}/echo/raw`, { body: raw })
  assertProblem(t, rawAnswer, 400, 'malformed_json', 'a __proto__ member is refused by the JSON parser, as everywhere in Portier')
  const deleted = await http(`${url}/echo/tasks/1`, { method: 'DELETE' })
  t.match(deleted.body, { method: 'DELETE', path: '/echo/tasks/1', body: null }, 'no body: null')
  const head = await request(`${url}/echo`, { method: 'HEAD', headers: PRINCIPAL })
  t.equal(head.statusCode, 200, 'HEAD is echoed too (without a body)')
  t.equal(head.headers['x-upstream-principal'], 'key_01HZX3')
  await head.body.dump()
  t.same((await http(`${url}/echo`)).body.principal, { id: null, permissions: [] }, 'no principal headers: id null, no permissions')
})

t.test('error: /echo takes JSON bodies only', async (t) => {
  const { url } = await startUpstreamMock(t)
  assertProblem(t, await http(`${url}/echo`, { body: 'a=1', headers: { 'content-type': 'application/x-www-form-urlencoded' } }), 415, 'unsupported_media_type')
  assertProblem(t, await http(`${url}/echo`, { body: 'plain', headers: { 'content-type': 'text/plain' } }), 415, 'unsupported_media_type')
})

t.test('happy: every answer says which principal, permissions and request id it saw', async (t) => {
  const { url } = await startUpstreamMock(t)
  const routes: Array<[string, number, string?]> = [
    ['/users/1', 200], ['/tasks?per_page=2', 200], ['/meetings/9999', 404], ['/users?page=0', 400], ['/no-such-route', 404],
    ['/text', 200], ['/gzip', 200], ['/status/503', 503], ['/edge-keys', 200], ['/healthz', 200], ['/echo/x', 200]
  ]
  for (const [path, status] of routes) {
    const seen = await http(`${url}${path}`, { headers: PRINCIPAL })
    assertStatus(t, seen, status, `${path}: ${status}`)
    t.same([seen.headers['x-upstream-principal'], seen.headers['x-upstream-permissions'], seen.headers['x-upstream-request-id']],
      [PRINCIPAL['x-portier-principal'], PRINCIPAL['x-portier-permissions'], PRINCIPAL['x-request-id']], `${path}: identity headers echoed`)
    t.equal(seen.headers['x-request-id'], 'req-42.a:b', `${path}: the request id is kept`)
  }
  const anonymous = await http(`${url}/users/1`)
  t.same([anonymous.headers['x-upstream-principal'], anonymous.headers['x-upstream-permissions'], anonymous.headers['x-upstream-request-id']],
    ['', '', ''], 'absent: empty strings')
  const user = await http(`${url}/echo`, { headers: { 'x-portier-principal': 'usr_7', 'x-portier-permissions': '' } })
  t.same(user.body.principal, { id: 'usr_7', permissions: [] }, 'a user principal with no permissions')
})
