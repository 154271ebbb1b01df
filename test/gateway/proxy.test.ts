import t from 'tap'
import { gunzipSync } from 'node:zlib'
import { assertJson, assertProblem, assertStatus } from '../helpers/assert.js'
import { startGateway, startStack } from '../helpers/gateway.js'
import { rawRequest, type HttpAnswer } from '../helpers/http.js'
import { freePort } from '../helpers/redis.js'
import { deepJson } from '../../upstream-mock/edge-bodies.js'
import { TEXT_BODY } from '../../upstream-mock/edge-routes.js'

/**
 * What the upstream receives and what the client gets back, over real sockets with
 * identity, Redis, upstream-mock and the shipped upstreams config: identity headers
 * replace the client's credential and any spoofed ones, bodies are inflected both ways
 * (and left byte-for-byte alone without the header), awkward upstream answers (text,
 * gzip, hostile keys, deep nesting, error statuses) come back intact or as a clean 502,
 * and bad request bodies, a dead upstream and a slow one get their problem+json.
 */
t.test('the proxy, end to end', async (t) => {
  const s = await startStack(t, { roles: { reader: ['users:list'], debugger: ['debug:read', 'debug:write'] } })
  const { gateway } = s
  const DEBUG = ['debug:read', 'debug:write']
  const debugKey = await s.createKey(DEBUG)
  const keyHeader = { 'x-api-key': debugKey.key }

  const permissionSet = (header: unknown): string[] => String(header).split(',').sort()

  /** Echoed request headers (snake_case keys when the answer was inflected to snake). */
  const seen = (answer: HttpAnswer): Record<string, string> => answer.body.headers as Record<string, string>

  t.test('request headers the upstream receives', async (t) => {
    t.test('an API key: stripped, replaced by the key\'s identity; spoofed x-portier-* replaced', async (t) => {
      const answer = await gateway.call('/echo?probe=1', {
        headers: {
          ...keyHeader,
          'x-portier-principal': 'key_spoofed',
          'x-portier-principal-type': 'service',
          'x-portier-permissions': '*',
          'x-portier-impersonate': 'root',
          'x-forwarded-for': '203.0.113.9'
        }
      })
      assertJson(t, answer, 200, 'GET /echo with a debug key')
      const headers = seen(answer)
      t.notOk('x-api-key' in headers, 'the client\'s x-api-key is not forwarded')
      t.notOk('authorization' in headers, 'no Authorization is made up')
      t.equal(headers['x-portier-principal'], debugKey.id, 'x-portier-principal is the key id, not the spoofed value')
      t.equal(headers['x-portier-principal-type'], 'key', 'x-portier-principal-type says key')
      t.same(permissionSet(headers['x-portier-permissions']), DEBUG, 'x-portier-permissions are the key\'s, not the spoofed *')
      t.notOk('x-portier-impersonate' in headers, 'any other client-sent x-portier-* header is dropped')
      t.same(answer.body.principal, { id: debugKey.id, permissions: DEBUG }, 'the upstream reads the key as principal')
      t.equal(headers['x-forwarded-for'], '127.0.0.1', 'x-forwarded-for is the client\'s address alone: what an untrusted client sent is dropped')
      t.same(answer.body.query, { probe: '1' }, 'the query string is forwarded')
      t.equal(answer.body.path, '/echo', 'the path is forwarded')
    })

    t.test('a Bearer token: Authorization stripped, the user\'s identity added', async (t) => {
      const tokens = await s.login()
      const answer = await gateway.call('/echo', {
        bearer: tokens.access_token,
        headers: { 'x-portier-principal': 'usr_spoofed', 'x-portier-permissions': '*' }
      })
      assertJson(t, answer, 200, 'GET /echo with a token')
      const headers = seen(answer)
      t.notOk('authorization' in headers, 'the client\'s Authorization is not forwarded')
      t.equal(headers['x-portier-principal'], s.userId, 'x-portier-principal is the user id')
      t.equal(headers['x-portier-principal-type'], 'user', 'x-portier-principal-type says user')
      t.same(permissionSet(headers['x-portier-permissions']), [...DEBUG, 'users:list'].sort(), 'x-portier-permissions are the user\'s roles\'')
    })

    t.test('x-request-id: propagated when well-formed, generated otherwise, echoed to the client', async (t) => {
      const presented = 'client-req.42:a_b'
      const kept = await gateway.call('/echo', { headers: { ...keyHeader, 'x-request-id': presented } })
      assertJson(t, kept, 200, 'with a well-formed x-request-id')
      t.equal(seen(kept)['x-request-id'], presented, 'the upstream gets the client\'s request id')
      t.equal(kept.headers['x-request-id'], presented, 'and the client gets it back')

      for (const [label, extra] of [['none sent', {}], ['malformed', { 'x-request-id': 'has spaces and <html>' }],
        ['too long', { 'x-request-id': 'a'.repeat(129) }]] as const) {
        const answer = await gateway.call('/echo', { headers: { ...keyHeader, ...extra } })
        assertJson(t, answer, 200, `x-request-id ${label}`)
        const upstreamId = seen(answer)['x-request-id']
        t.match(upstreamId, /^[\w.:-]{1,128}$/, `${label}: the upstream gets a generated, well-formed id`)
        t.not(upstreamId, (extra as Record<string, string>)['x-request-id'], `${label}: not the client's value`)
        t.equal(answer.headers['x-request-id'], upstreamId, `${label}: the client gets the same id as the upstream`)
      }
    })

    t.test('x-api-inflection is the gateway\'s business, not the upstream\'s', async (t) => {
      const answer = await gateway.call('/echo', { headers: { ...keyHeader, 'x-api-inflection': 'snake' } })
      assertJson(t, answer, 200, 'GET /echo asking for snake')
      const headers = seen(answer)
      t.equal(headers.x_portier_principal, debugKey.id, 'the echoed headers are there (in snake case)')
      t.notOk('x_api_inflection' in headers || 'x-api-inflection' in headers, 'x-api-inflection is not forwarded')
      t.notOk('x_api_key' in headers || 'x-api-key' in headers, 'nor the key')
    })
  })

  t.test('request and response bodies', async (t) => {
    const camelBody = { firstName: 'A', homeAddress: { postalCode: '1' }, items: [{ isDone: true }] }
    const snakeBody = { first_name: 'A', home_address: { postal_code: '1' }, items: [{ is_done: true }] }

    t.test('camel in, snake upstream, camel back', async (t) => {
      const answer = await gateway.call('/echo', { headers: { ...keyHeader, 'x-api-inflection': 'camel' }, body: camelBody })
      assertJson(t, answer, 200, 'POST /echo inflected to camel')
      t.same(answer.body.body, camelBody, 'the echoed body comes back camelCase')
      t.equal(answer.body.method, 'POST', 'echo saw a POST')
      // Response inflection would hide the keys the upstream saw, but not a header's value:
      // the upstream got exactly the compact snake_case text.
      t.equal(answer.body.headers.contentLength, String(Buffer.byteLength(JSON.stringify(snakeBody))),
        'the upstream received the snake_case body (its length, not the camelCase one\'s)')
      t.match(answer.headers.vary, /x-api-inflection/i, 'the answer varies by inflection')

      const asSnake = await gateway.call('/echo', { headers: { ...keyHeader, 'x-api-inflection': 'snake' }, body: camelBody })
      assertJson(t, asSnake, 200, 'POST /echo inflected to snake')
      t.same(asSnake.body.body, snakeBody, 'first_name, home_address.postal_code, items[0].is_done reached the upstream')
    })

    t.test('without the header the body is forwarded byte for byte', async (t) => {
      // Odd spacing and key order: any re-serialisation would change the length.
      const text = '{ "firstName" :  "A",\n  "home_address": {"postalCode": "1"} , "items": [ {"isDone": true} ] }'
      const answer = await gateway.call('/echo', { headers: keyHeader, body: text })
      assertJson(t, answer, 200, 'POST /echo without inflection')
      t.same(answer.body.body, JSON.parse(text), 'the keys arrive as the client wrote them')
      t.equal(answer.body.headers['content-length'], String(Buffer.byteLength(text)), 'the same bytes: same length')
      t.equal(answer.body.headers['content-type'], 'application/json', 'and the same content type')
    })

    t.test('an upstream whose native case is camel gets camelCase', async (t) => {
      const camelGateway = await startGateway(t, {
        ...s.gatewaySetup,
        upstreams: {
          upstreams: [{
            name: 'camel-service',
            target: s.upstreamUrl,
            keyCase: 'camel',
            routes: [{ method: 'POST', path: '/echo', permission: 'debug:write' }]
          }]
        }
      })
      const answer = await camelGateway.call('/echo', { headers: { ...keyHeader, 'x-api-inflection': 'snake' }, body: snakeBody })
      assertJson(t, answer, 200, 'POST /echo to a camel upstream, asking for snake')
      t.equal(answer.body.headers.content_length, String(Buffer.byteLength(JSON.stringify(camelBody))),
        'the upstream received the camelCase body')
      t.same(answer.body.body, snakeBody, 'and the client gets snake_case back')
    })

    t.test('POST /tasks with a camelCase body: 201 and the task comes back camelCase', async (t) => {
      const taskKey = await s.createKey(['tasks:create'])
      const answer = await gateway.call('/tasks', {
        headers: { 'x-api-key': taskKey.key, 'x-api-inflection': 'camel' },
        body: { title: 'Write the proxy suite', dueOn: '2026-02-01', checklistItems: [{ label: 'headers', isDone: false }] }
      })
      assertJson(t, answer, 201, 'POST /tasks')
      t.match(answer.body, {
        id: Number,
        title: 'Write the proxy suite',
        dueOn: '2026-02-01',
        status: 'todo',
        assigneeId: null,
        checklistItems: [{ label: 'headers', isDone: false }],
        createdAt: String,
        updatedAt: String
      }, 'the created task, camelCase')
      t.notOk('due_on' in answer.body || 'checklist_items' in answer.body || 'created_at' in answer.body, 'no snake_case member left')
    })
  })

  t.test('awkward upstream answers', async (t) => {
    t.test('text/plain passes untouched', async (t) => {
      for (const style of [undefined, 'camel']) {
        const answer = await gateway.call('/text', { headers: { ...keyHeader, ...(style !== undefined ? { 'x-api-inflection': style } : {}) } })
        assertStatus(t, answer, 200, `GET /text (${style ?? 'no inflection'})`)
        t.equal(answer.text, TEXT_BODY, `${style ?? 'no inflection'}: the same text, JSON-looking content included`)
        t.match(answer.headers['content-type'], /^text\/plain/, `${style ?? 'no inflection'}: still text/plain`)
      }
    })

    t.test('gzip: decoded and inflected when asked, passed through otherwise', async (t) => {
      const inflected = await rawRequest(gateway.url, '/gzip', { headers: { ...keyHeader, 'x-api-inflection': 'camel' } })
      assertJson(t, inflected, 200, 'GET /gzip inflected')
      t.notOk('content-encoding' in inflected.headers, 'no content-encoding once decoded')
      t.equal(inflected.headers['content-length'], String(inflected.bytes.length), 'content-length is the decoded body\'s')
      t.equal(inflected.body.users.length, 20, 'the users are there')
      t.ok('firstName' in inflected.body.users[0] && 'perPage' in inflected.body.meta, 'and camelCase')

      const passed = await rawRequest(gateway.url, '/gzip', { headers: keyHeader })
      assertJson(t, passed, 200, 'GET /gzip without inflection')
      t.equal(passed.headers['content-encoding'], 'gzip', 'content-encoding gzip is kept')
      const decoded = JSON.parse(gunzipSync(passed.bytes).toString('utf8')) as { users: Array<Record<string, unknown>> }
      t.ok('first_name' in (decoded.users[0] ?? {}), 'the bytes are the upstream\'s gzip of its snake_case JSON')
    })

    t.test('/edge-keys in every style: __proto__ survives as a member, the gateway keeps serving', async (t) => {
      const pollutedName: Record<string, string> = { none: 'is_polluted', camel: 'isPolluted', dash: 'is-polluted', snake: 'is_polluted', pascal: 'IsPolluted' }
      for (const [style, name] of Object.entries(pollutedName)) {
        const answer = await gateway.call('/edge-keys', { headers: { ...keyHeader, ...(style !== 'none' ? { 'x-api-inflection': style } : {}) } })
        assertJson(t, answer, 200, `GET /edge-keys (${style})`)
        const body = answer.body as Record<string, unknown>
        t.ok(Object.hasOwn(body, '__proto__'), `${style}: __proto__ is an own member of the JSON text`)
        t.same(Object.getOwnPropertyDescriptor(body, '__proto__')?.value, { [name]: true }, `${style}: with its (inflected) value`)
        const [ctor, proto] = style === 'pascal' ? ['Constructor', 'Prototype'] : ['constructor', 'prototype']
        t.same(Object.hasOwn(body, ctor) ? body[ctor] : undefined, { [proto]: { [name]: true } }, `${style}: constructor.prototype is plain data`)
        // The gateway runs in this process: a polluted Object.prototype would show here.
        t.equal(({} as Record<string, unknown>)[name], undefined, `${style}: Object.prototype untouched`)
      }
      assertJson(t, await gateway.call('/echo', { headers: keyHeader }), 200, 'the gateway answers normally afterwards')
      assertProblem(t, await gateway.call('/users', { headers: keyHeader }), 403, 'permission_denied', 'and still authorises normally')
    })

    t.test('/deep: inflected within the depth limit, 502 beyond it, passed through without inflection', async (t) => {
      const shallow = await gateway.call('/deep?depth=100', { headers: { ...keyHeader, 'x-api-inflection': 'camel' } })
      assertJson(t, shallow, 200, 'depth 100 inflected')
      let node = shallow.body as Record<string, any>
      let levels = 1
      while ('childNode' in node) { node = node.childNode; levels++ }
      t.equal(levels, 100, 'every level inflected (childNode)')
      t.same(node, { leafDepth: 100 }, 'down to the leaf')

      assertProblem(t, await gateway.call('/deep?depth=5000', { headers: { ...keyHeader, 'x-api-inflection': 'camel' } }), 502,
        'upstream_body_not_inflectable', 'depth 5000 inflected')
      const passed = await gateway.call('/deep?depth=5000', { headers: keyHeader })
      assertJson(t, passed, 200, 'depth 5000 without inflection')
      t.equal(passed.text, deepJson(5000), 'passed through unchanged')
    })

    t.test('upstream statuses and bodies are kept', async (t) => {
      for (const code of [404, 418, 503]) {
        const plain = await gateway.call(`/status/${code}`, { headers: keyHeader })
        assertJson(t, plain, code, `GET /status/${code}`)
        t.same(plain.body, { status_code: code }, `${code}: the upstream's body`)
        const camel = await gateway.call(`/status/${code}`, { headers: { ...keyHeader, 'x-api-inflection': 'camel' } })
        assertJson(t, camel, code, `GET /status/${code} inflected`)
        t.same(camel.body, { statusCode: code }, `${code}: the upstream's body, camelCase`)
      }
    })
  })

  t.test('refused request bodies', async (t) => {
    assertProblem(t, await gateway.call('/echo', { headers: { ...keyHeader, 'content-type': 'text/plain' }, body: 'hello' }), 415,
      'unsupported_media_type', 'a text/plain body')
    const malformed = await gateway.call('/echo', { headers: { ...keyHeader, 'x-api-inflection': 'camel' }, body: '{"firstName": "A",' })
    assertProblem(t, malformed, 400, 'malformed_json', 'malformed JSON with inflection')
    const deep = `${'{"a":'.repeat(9_999)}1${'}'.repeat(9_999)}`
    assertProblem(t, await gateway.call('/echo', { headers: { ...keyHeader, 'x-api-inflection': 'camel' }, body: deep }), 400,
      'body_too_deep', 'a 10 000-deep body with inflection')
    assertProblem(t, await gateway.call('/echo', { headers: { ...keyHeader, accept: 'text/html' } }), 406, 'not_acceptable', 'Accept: text/html')

    const small = await s.addGateway({ bodyLimitBytes: 2048 })
    const big = { padding: 'x'.repeat(3_000) }
    assertProblem(t, await small.call('/echo', { headers: keyHeader, body: big }), 413, 'body_too_large', 'a body over bodyLimitBytes')
    assertJson(t, await small.call('/echo', { headers: keyHeader, body: { padding: 'x'.repeat(1_000) } }), 200, 'a body under the limit passes')
  })

  t.test('upstream failures', async (t) => {
    t.test('a closed port: 502 upstream_unavailable', async (t) => {
      const down = await startGateway(t, {
        ...s.gatewaySetup,
        upstreams: { upstreams: [{ name: 'gone', target: `http://127.0.0.1:${await freePort()}`, routes: [{ method: 'GET', path: '/echo', permission: 'debug:read' }] }] }
      })
      assertProblem(t, await down.call('/echo', { headers: keyHeader }), 502, 'upstream_unavailable', 'upstream down')
    })

    t.test('slower than responseMs: 504 upstream_timeout, in bounded time', async (t) => {
      const impatient = await startGateway(t, {
        ...s.gatewaySetup,
        upstreams: { upstreams: [{ name: 'sluggish', target: s.upstreamUrl, timeouts: { responseMs: 300 }, routes: [{ method: 'GET', path: '/slow', permission: 'debug:read' }] }] }
      })
      const startedAt = Date.now()
      const answer = await impatient.call('/slow?delay_ms=3000', { headers: keyHeader })
      const elapsedMs = Date.now() - startedAt
      assertProblem(t, answer, 504, 'upstream_timeout', 'upstream too slow')
      t.ok(elapsedMs < 2_500, `answered in ${elapsedMs} ms (< 2500)`)
    })
  })
})
