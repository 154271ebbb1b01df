import t from 'tap'
import { startGateway, mockUpstreams, startStack } from '../helpers/gateway.js'
import { converse, requestBytes, type Conversation } from '../helpers/raw-socket.js'

/**
 * The gateway keeps a connection wherever a client can go on using it, and never lets a
 * reset reach a client before its answer: refusals of bodyless requests keep the
 * connection (keep-alive and pipelining go on, in order); a small refused body is read
 * out and the connection kept; a large one is answered with `Connection: close` and a
 * lingering close (half-close, the rest read and thrown away, bounded); an HTTP/0.9
 * request line is a 400 and a close. Over real sockets against a running gateway.
 */

const LINGER_MS = 1_500
const LINGER_MAX_BYTES = 4 * 1_048_576

t.test('connections keep their answers', async (t) => {
  const s = await startStack(t)
  const gateway = await startGateway(t, {
    ...s.gatewaySetup,
    upstreams: mockUpstreams(s.upstreamUrl),
    unreadBodies: { drainMaxBytes: 65_536, lingerMs: LINGER_MS, lingerMaxBytes: LINGER_MAX_BYTES }
  })
  const host = new URL(gateway.url).host
  const users = await s.createKey(['users:list'])
  const tasks = await s.createKey(['tasks:list'])
  const writer = await s.createKey(['debug:write'])
  const get = (path: string, headers: Array<[string, string]> = [], method = 'GET'): Buffer =>
    requestBytes(`${method} ${path} HTTP/1.1`, [['host', host], ...headers.some(([name]) => name === 'accept') ? [] : [['accept', 'application/json'] as [string, string]], ...headers])
  const post = (path: string, headers: Array<[string, string]>, body: Buffer, framing: 'length' | 'chunked' = 'length'): Buffer => {
    const frame: Array<[string, string]> = framing === 'length' ? [['content-length', String(body.length)]] : [['transfer-encoding', 'chunked']]
    const payload = framing === 'length' ? body : Buffer.concat([Buffer.from(`${body.length.toString(16)}\r\n`), body, Buffer.from('\r\n0\r\n\r\n')])
    return requestBytes(`POST ${path} HTTP/1.1`, [['host', host], ['accept', 'application/json'], ['content-type', 'application/json'], ...headers, ...frame], payload)
  }
  const key = (k: { key: string }): [string, string] => ['x-api-key', k.key]
  const statuses = (c: Conversation): number[] => c.answers.map((a) => a.status)
  const codes = (c: Conversation): Array<string | undefined> => c.answers.map((a) => (a.body as { code?: string } | null)?.code)

  await t.test('a pipelined 200, 401, 403, 200 gets four answers, in order, on a connection that stays open', async (t) => {
    const talk = await converse(gateway.url, [Buffer.concat([
      get('/users?per_page=1', [key(users)]),
      get('/users?per_page=1'),
      get('/users?per_page=1', [key(tasks)]),
      get('/users?per_page=2', [key(users)])
    ])], { expected: 4 })
    t.same(statuses(talk), [200, 401, 403, 200], 'four answers, in order')
    t.same(codes(talk), [undefined, 'credentials_missing', 'permission_denied', undefined])
    t.equal((talk.answers[3]?.body as { users?: unknown[] } | undefined)?.users?.length, 2, 'the last one is its own answer (two users)')
    t.notOk(talk.closed || talk.reset, 'the connection is still open')
    for (const answer of talk.answers) t.not(answer.headers.connection, 'close', `${answer.status}: no Connection: close`)
  })

  await t.test('every refusal of a bodyless request keeps the connection', async (t) => {
    const refusals: Array<{ label: string, request: Buffer, status: number, code: string }> = [
      { label: 'no credential', request: get('/users'), status: 401, code: 'credentials_missing' },
      { label: 'a bad key', request: get('/users', [['x-api-key', 'ptk_nope']]), status: 401, code: 'invalid_api_key' },
      { label: 'a bad token', request: get('/users', [['authorization', 'Bearer x.y.z']]), status: 401, code: 'invalid_token' },
      { label: 'no permission', request: get('/users', [key(tasks)]), status: 403, code: 'permission_denied' },
      { label: 'no route', request: get('/nowhere', [key(users)]), status: 404, code: 'not_found' },
      { label: 'another method', request: get('/users', [key(users)], 'DELETE'), status: 405, code: 'method_not_allowed' },
      { label: 'a path trick', request: get('/users/%2e%2e/admin', [key(users)]), status: 400, code: 'malformed_path' },
      { label: 'a method override', request: get('/users?_method=DELETE', [key(users)]), status: 400, code: 'method_override_refused' },
      { label: 'an unknown inflection', request: get('/users', [key(users), ['x-api-inflection', 'screaming']]), status: 400, code: 'invalid_inflection' },
      { label: 'Accept without JSON', request: get('/users', [key(users), ['accept', 'text/html']]), status: 406, code: 'not_acceptable' },
      { label: 'both credentials', request: get('/users', [key(users), ['authorization', 'Bearer x']]), status: 400, code: 'conflicting_credentials' },
      { label: 'a HEAD without credential', request: get('/users', [], 'HEAD'), status: 401, code: '' }
    ]
    for (const refusal of refusals) {
      const heads = new Set(refusal.label.startsWith('a HEAD') ? [0] : [])
      const talk = await converse(gateway.url, [refusal.request, get('/users?per_page=1', [key(users)])], { expected: 2, heads })
      t.equal(talk.answers[0]?.status, refusal.status, `${refusal.label}: ${refusal.status}`)
      if (refusal.code !== '') t.equal(codes(talk)[0], refusal.code, `${refusal.label}: ${refusal.code}`)
      t.not(talk.answers[0]?.headers.connection, 'close', `${refusal.label}: no Connection: close`)
      t.equal(talk.answers[1]?.status, 200, `${refusal.label}: the next request on the connection is served`)
      t.notOk(talk.closed || talk.reset, `${refusal.label}: the connection stays open`)
    }
  })

  await t.test('a small refused body is read out and the connection kept, whether its length is declared or chunked', async (t) => {
    const body = Buffer.from(JSON.stringify({ note: 'x'.repeat(40_000) }))
    for (const framing of ['length', 'chunked'] as const) {
      const cases: Array<[string, Array<[string, string]>, number]> = [['no credential', [], 401], ['no permission', [key(users)], 403], ['a bad key', [['x-api-key', 'ptk_nope']], 401]]
      for (const [label, headers, status] of cases) {
        const talk = await converse(gateway.url, [post('/echo', [...headers], body, framing), get('/users?per_page=1', [key(users)])], { expected: 2 })
        t.same(statuses(talk), [status, 200], `${framing}, ${label}: answered, then the next request`)
        t.not(talk.answers[0]?.headers.connection, 'close', `${framing}, ${label}: the connection is kept`)
      }
    }
    const tooLarge = await converse(gateway.url, [post('/sessions', [], Buffer.from(JSON.stringify({ session: { email: 'a'.repeat(20_000) } }))), get('/users?per_page=1', [key(users)])], { expected: 2 })
    t.same(statuses(tooLarge), [413, 200], 'a 413 on identity\'s small limit, the rest of a 20 KB body read out, then the next request')
  })

  await t.test('a large refused body: the answer says close, the client reads it, and nothing after it on the connection is served', async (t) => {
    const body = Buffer.alloc(1_000_000, 0x20)
    const talk = await converse(gateway.url, [post('/echo', [], body), get('/users?per_page=1', [key(users)])], { expected: 1, untilClosed: true, timeoutMs: 10_000 })
    t.same(statuses(talk), [401], 'one answer: the pipelined request after the body is not read')
    t.equal(talk.answers[0]?.headers.connection, 'close', 'Connection: close')
    t.ok(talk.closed, 'the server closed the connection')
    t.equal(talk.answeredBeforeEnd, 1, 'the answer arrived before the connection ended')
  })

  await t.test('no reset before the answer across 500 early-refused uploads', async (t) => {
    const body = Buffer.alloc(512 * 1_024, 0x20)
    const kinds = [
      { label: 'no credential, Content-Length', request: () => post('/echo', [], body), status: 401 },
      { label: 'no credential, chunked', request: () => post('/echo', [], body, 'chunked'), status: 401 },
      { label: 'no permission, Content-Length', request: () => post('/echo', [key(users)], body), status: 403 },
      { label: 'over the route\'s limit, Content-Length', request: () => post('/sessions', [], body), status: 413 },
      { label: 'no route, chunked', request: () => post('/nowhere', [key(writer)], body, 'chunked'), status: 404 }
    ]
    const outcomes: Array<{ kind: string, talk: Conversation, status: number }> = []
    for (let batch = 0; batch < 10; batch++) {
      outcomes.push(...await Promise.all(Array.from({ length: 50 }, async (_, i) => {
        const kind = kinds[(batch * 50 + i) % kinds.length] as typeof kinds[number]
        return { kind: kind.label, status: kind.status, talk: await converse(gateway.url, [kind.request()], { expected: 1, untilClosed: true, timeoutMs: 15_000 }) }
      })))
    }
    t.equal(outcomes.length, 500, '500 uploads')
    const unanswered = outcomes.filter((o) => o.talk.answeredBeforeEnd < 1)
    t.equal(unanswered.length, 0, 'every one read its answer before its connection ended', { unanswered: unanswered.slice(0, 3).map((o) => ({ kind: o.kind, reset: o.talk.reset })) })
    const wrong = outcomes.filter((o) => o.talk.answers[0]?.status !== o.status)
    t.equal(wrong.length, 0, 'each with the status of its refusal', { wrong: wrong.slice(0, 3).map((o) => ({ kind: o.kind, status: o.talk.answers[0]?.status })) })
    t.equal(outcomes.filter((o) => o.talk.reset).length, 0, 'and no connection was reset at all')
  })

  await t.test('a lingering connection is closed once its time or its bytes are spent', async (t) => {
    const head = requestBytes('POST /echo HTTP/1.1', [['host', host], ['content-type', 'application/json'], ['content-length', String(100 * 1_048_576)]])
    // A client that keeps sending slowly after its answer: closed at the linger time.
    const started = performance.now()
    const slow = await converse(gateway.url, [head, ...Array.from({ length: 40 }, () => Buffer.alloc(1_000, 0x20))], { expected: 1, untilClosed: true, timeoutMs: 10_000, gapMs: 100 })
    const tookMs = performance.now() - started
    t.same(statuses(slow), [401], 'answered')
    t.ok(slow.closed, 'then closed by the server')
    t.ok(tookMs < LINGER_MS + 1_500, `within the linger time (${Math.round(tookMs)} ms)`)
    // A client that floods: closed once the byte bound is passed, long before its 100 MiB are sent.
    const flood = await converse(gateway.url, [head, ...Array.from({ length: 100 }, () => Buffer.alloc(100_000, 0x20))], { expected: 1, untilClosed: true, timeoutMs: 10_000 })
    t.same(statuses(flood), [401], 'answered')
    t.ok(flood.closed || flood.reset, 'then closed')
    t.equal(flood.answeredBeforeEnd, 1, 'the answer came first')
  })

  await t.test('an HTTP/0.9 request line gets a 400 and the connection is closed', async (t) => {
    for (const line of ['GET /users', 'GET /users?per_page=1', 'GET /']) {
      const talk = await converse(gateway.url, [Buffer.from(`${line}\r\n\r\n`)], { expected: 1, untilClosed: true })
      t.equal(talk.answers[0]?.status, 400, `${line}: 400`)
      t.equal(codes(talk)[0], 'unsupported_http_version', `${line}: unsupported_http_version`)
      t.ok(talk.closed, `${line}: closed`)
    }
    const identity = await converse(s.publicUrl, [Buffer.from('GET /healthz\r\n\r\n')], { expected: 1, untilClosed: true })
    t.equal(codes(identity)[0], 'unsupported_http_version', 'identity\'s listener too')
    const mock = await converse(s.upstreamUrl, [Buffer.from('GET /users\r\n\r\n')], { expected: 1, untilClosed: true })
    t.equal(codes(mock)[0], 'unsupported_http_version', 'and the mock\'s')
    const old = await converse(gateway.url, [get('/users?per_page=1', [key(users)]).toString('latin1').replace('HTTP/1.1', 'HTTP/1.0')].map((text) => Buffer.from(text, 'latin1')), { expected: 1, untilClosed: true })
    t.equal(old.answers[0]?.status, 200, 'HTTP/1.0 is served')
  })
})
