import t, { type Test } from 'tap'
import { gzipSync } from 'node:zlib'
import { assertJson, assertStatus } from '../helpers/assert.js'
import { assertPrototypeClean, runCorpus, startCorpus, type BadInput, type Reaches } from './corpus.js'

/**
 * Bad request bodies through the gateway (the bad-input corpus): malformed JSON, wrong
 * types, missing and extra members, bodies over the limit, Content-Type and
 * Content-Encoding lies, invalid UTF-8, 10 000-deep nesting and 1 000 000-key objects
 * sent to an inflected route, `__proto__` / `constructor` / `prototype` members, and
 * e-mails with unicode, SQL and NUL characters. Targets: the back-office upstream
 * (POST /tasks, PATCH /tasks/1, POST /echo with x-api-inflection: camel) and
 * identity's public routes behind the gateway (POST /sessions, POST /tokens).
 *
 * Where a case is refused decides `reaches`: with x-api-inflection the gateway parses
 * the body itself and refuses bad JSON before any upstream sees it; without it the
 * gateway forwards the body unread and the upstream's own parser and schema answer.
 */

const BODY_LIMIT = 1_048_576
const JSON_TYPE: [string, string] = ['content-type', 'application/json']
const CAMEL: [string, string] = ['x-api-inflection', 'camel']

/** `depth` nested objects: {"a":{"a":…1…}}. */
const nested = (depth: number): string => `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`
/** One object with `count` members whose names every style renames (`a_b7` → `aB7`). */
const manyKeys = (count: number): string => `{${Array.from({ length: count }, (_, i) => `"a_b${i}":0`).join(',')}}`
/** A JSON text whose bytes are `before`, then `bytes` (not UTF-8), then `after`. */
const withBytes = (before: string, bytes: number[], after: string): Buffer => Buffer.concat([Buffer.from(before), Buffer.from(bytes), Buffer.from(after)])

t.test('bad request bodies', async (t) => {
  const corpus = await startCorpus(t)
  const { keys, tokens, stack } = corpus
  const ada = stack.user
  const { password } = ada

  type Expect = [status: number, code: string, reaches: Reaches]
  const route = (method: string, target: string, credential: Array<[string, string]>) =>
    (name: string, body: string | Buffer, [status, code, reaches]: Expect, headers: Array<[string, string | Buffer]> = [JSON_TYPE],
      extra: Partial<BadInput> = {}): BadInput =>
      ({ name: `${method} ${target}: ${name}`, method, target, headers: [...credential, ...headers], body, status, code, reaches, ...extra })

  const createTask = route('POST', '/tasks', [['x-api-key', keys.tasks.key]])
  const patchTask = route('PATCH', '/tasks/1', [['x-api-key', keys.tasks.key]])
  const echo = route('POST', '/echo', [['x-api-key', keys.debug.key], CAMEL])
  const login = route('POST', '/sessions', [])
  const refresh = route('POST', '/tokens', [['authorization', `Bearer ${tokens.access_token}`]])
  const task = (members: Record<string, unknown>): string => JSON.stringify({ title: 'A task', ...members })
  const session = (email: unknown, pass: unknown = password): string => JSON.stringify({ session: { email, password: pass } })

  const BAD_JSON: Expect = [400, 'malformed_json', 'none']
  const UPSTREAM_BAD_JSON: Expect = [400, 'malformed_json', 'backoffice']
  const UPSTREAM_INVALID: Expect = [400, 'validation_failed', 'backoffice']
  const IDENTITY_BAD_JSON: Expect = [400, 'malformed_json', 'identity']
  const IDENTITY_INVALID: Expect = [400, 'validation_failed', 'identity']
  const TOO_LARGE: Expect = [413, 'body_too_large', 'none']
  const NOT_JSON: Expect = [415, 'unsupported_media_type', 'none']
  const TOO_DEEP: Expect = [400, 'body_too_deep', 'none']
  const TOO_WIDE: Expect = [400, 'body_too_wide', 'none']
  const WRONG_LOGIN: Expect = [401, 'invalid_credentials', 'identity']

  const overLimit = task({ description: 'x'.repeat(BODY_LIMIT) })
  const deep = nested(10_000)
  const million = manyKeys(1_000_000)

  await t.test('malformed JSON', async (t) => {
    const texts: Array<[string, string]> = [
      ['truncated', '{"title": "A task",'],
      ['trailing garbage', '{"title": "A task"} {}'],
      ['single quotes', "{'title': 'A task'}"],
      ['a comment', '{"title": /* hi */ "A task"}'],
      ['NaN', '{"title": "A task", "priority": NaN}'],
      ['an unquoted member name', '{title: "A task"}'],
      ['a trailing comma', '{"title": "A task",}'],
      ['form-encoded text', 'title=A+task&status=todo']
    ]
    await runCorpus(t, corpus, [
      ...texts.map(([name, text]) => createTask(name, text, UPSTREAM_BAD_JSON)),
      ...texts.map(([name, text]) => createTask(`${name}, inflected`, text, BAD_JSON, [JSON_TYPE, CAMEL])),
      patchTask('truncated', '{"status": "done"', UPSTREAM_BAD_JSON),
      echo('truncated', '{"firstName": "A",', BAD_JSON),
      createTask('an empty body', '', [400, 'empty_body', 'backoffice']),
      login('truncated', `{"session": {"email": "${ada.email}", "password": "${password}"`, IDENTITY_BAD_JSON),
      login('truncated, inflected', `{"session": {"email": "${ada.email}", "password": "${password}"`, BAD_JSON, [JSON_TYPE, CAMEL]),
      login('an empty body', '', [400, 'empty_body', 'identity']),
      refresh('truncated', `{"refresh_token": "${tokens.refresh_token}"`, IDENTITY_BAD_JSON),
      refresh('truncated, inflected', `{"refresh_token": "${tokens.refresh_token}"`, BAD_JSON, [JSON_TYPE, CAMEL])
    ])
  })

  await t.test('wrong types (never coerced)', async (t) => {
    await runCorpus(t, corpus, [
      createTask('title as a number', task({ title: 42 }), UPSTREAM_INVALID),
      createTask('title as null', task({ title: null }), UPSTREAM_INVALID),
      createTask('status outside its enum', task({ status: 'finished' }), UPSTREAM_INVALID),
      createTask('assignee_id as a numeric string', task({ assignee_id: '7' }), UPSTREAM_INVALID),
      createTask('due_on not a date', task({ due_on: 'tomorrow' }), UPSTREAM_INVALID),
      createTask('tags as a string', task({ tags: 'urgent' }), UPSTREAM_INVALID),
      createTask('a checklist item of the wrong shape', task({ checklist_items: [{ label: 1, is_done: 'yes' }] }), UPSTREAM_INVALID),
      createTask('a JSON array', JSON.stringify([{ title: 'A task' }]), UPSTREAM_INVALID),
      createTask('a JSON string', JSON.stringify('A task'), UPSTREAM_INVALID),
      createTask('JSON null', 'null', UPSTREAM_INVALID),
      createTask('camelCase members of the wrong type, inflected', JSON.stringify({ title: 'A task', dueOn: 20260101 }), UPSTREAM_INVALID,
        [JSON_TYPE, CAMEL]),
      patchTask('status as a number', JSON.stringify({ status: 3 }), UPSTREAM_INVALID),
      login('password as a number', session(ada.email, 12345678), IDENTITY_INVALID),
      login('password as an array holding the right one', session(ada.email, [password]), IDENTITY_INVALID),
      login('password as an operator object', session(ada.email, { $gt: '' }), IDENTITY_INVALID),
      login('email as an array', session([ada.email]), IDENTITY_INVALID),
      login('session as a string', JSON.stringify({ session: `${ada.email}:${password}` }), IDENTITY_INVALID),
      refresh('refresh_token as a number', JSON.stringify({ refresh_token: 1 }), IDENTITY_INVALID),
      refresh('refresh_token as an array holding the right one', JSON.stringify({ refresh_token: [tokens.refresh_token] }), IDENTITY_INVALID)
    ])
  })

  await t.test('missing and extra members', async (t) => {
    await runCorpus(t, corpus, [
      createTask('no title', JSON.stringify({ status: 'todo' }), UPSTREAM_INVALID),
      createTask('an empty object', '{}', UPSTREAM_INVALID),
      createTask('an unknown member', task({ is_admin: true }), UPSTREAM_INVALID),
      createTask('the server-written id', task({ id: 1 }), UPSTREAM_INVALID),
      createTask('the server-written created_at', task({ created_at: '2020-01-01T00:00:00Z' }), UPSTREAM_INVALID),
      createTask('an unknown camelCase member, inflected', JSON.stringify({ title: 'A task', isAdmin: true }), UPSTREAM_INVALID, [JSON_TYPE, CAMEL]),
      patchTask('an empty object', '{}', UPSTREAM_INVALID),
      patchTask('the id', JSON.stringify({ id: 2 }), UPSTREAM_INVALID),
      login('no password', JSON.stringify({ session: { email: ada.email } }), IDENTITY_INVALID),
      login('no session', JSON.stringify({ email: ada.email, password }), IDENTITY_INVALID),
      login('an extra member beside session', JSON.stringify({ session: { email: ada.email, password }, remember_me: true }), IDENTITY_INVALID),
      login('an extra member inside session', JSON.stringify({ session: { email: ada.email, password, role: 'admin' } }), IDENTITY_INVALID),
      refresh('no refresh_token', '{}', IDENTITY_INVALID),
      refresh('an extra member', JSON.stringify({ refresh_token: tokens.refresh_token, scope: 'admin' }), IDENTITY_INVALID),
      refresh('a refresh_token over 512 characters', JSON.stringify({ refresh_token: `prt_${'a'.repeat(600)}` }), IDENTITY_INVALID)
    ])
  })

  await t.test('bodies over the limit', async (t) => {
    const big = 'x'.repeat(BODY_LIMIT + 1)
    await runCorpus(t, corpus, [
      createTask('one byte over 1 MiB of JSON', overLimit, TOO_LARGE),
      createTask('over the limit, inflected', overLimit, TOO_LARGE, [JSON_TYPE, CAMEL]),
      createTask('a Content-Length over the limit, refused before the body is sent', '', TOO_LARGE,
        [JSON_TYPE, ['content-length', String(50 * BODY_LIMIT)]]),
      createTask('chunked, over the limit', `${big.length.toString(16)}\r\n${big}\r\n0\r\n\r\n`, TOO_LARGE,
        [JSON_TYPE, ['transfer-encoding', 'chunked']]),
      login('over the limit', JSON.stringify({ session: { email: ada.email, password: 'x'.repeat(BODY_LIMIT) } }), TOO_LARGE),
      refresh('over the limit', JSON.stringify({ refresh_token: tokens.refresh_token, padding: 'x'.repeat(BODY_LIMIT) }), TOO_LARGE)
    ])
  })

  await t.test('Content-Type and Content-Encoding lies', async (t) => {
    const body = task({})
    await runCorpus(t, corpus, [
      createTask('JSON sent as text/plain', body, NOT_JSON, [['content-type', 'text/plain']]),
      createTask('JSON sent as a form', body, NOT_JSON, [['content-type', 'application/x-www-form-urlencoded']]),
      createTask('JSON sent as multipart', body, NOT_JSON, [['content-type', 'multipart/form-data; boundary=x']]),
      createTask('JSON sent as XML', body, NOT_JSON, [['content-type', 'application/xml']]),
      createTask('JSON sent as text/json', body, NOT_JSON, [['content-type', 'text/json']]),
      createTask('JSON with no Content-Type', body, NOT_JSON, []),
      createTask('a list of types', body, NOT_JSON, [['content-type', 'application/json, text/plain']]),
      createTask('XML sent as application/json', '<task><title>A task</title></task>', UPSTREAM_BAD_JSON),
      createTask('a +json type the upstream does not take', body, [415, 'unsupported_media_type', 'backoffice'],
        [['content-type', 'application/merge-patch+json']]),
      createTask('plain JSON claiming Content-Encoding: gzip', body, NOT_JSON, [JSON_TYPE, ['content-encoding', 'gzip']]),
      createTask('gzip JSON with Content-Encoding: gzip', gzipSync(body), NOT_JSON, [JSON_TYPE, ['content-encoding', 'gzip']]),
      createTask('gzip JSON without Content-Encoding', gzipSync(body), BAD_JSON),
      login('JSON sent as text/plain', session(ada.email), NOT_JSON, [['content-type', 'text/plain']]),
      login('JSON with no Content-Type', session(ada.email), NOT_JSON, []),
      login('plain JSON claiming Content-Encoding: deflate', session(ada.email), NOT_JSON, [JSON_TYPE, ['content-encoding', 'deflate']]),
      refresh('JSON sent as a form', JSON.stringify({ refresh_token: tokens.refresh_token }), NOT_JSON,
        [['content-type', 'application/x-www-form-urlencoded']])
    ])
  })

  await t.test('invalid UTF-8', async (t) => {
    await runCorpus(t, corpus, [
      createTask('a 0xFF byte in a string', withBytes('{"title": "A ', [0xff], ' task"}'), BAD_JSON),
      createTask('an overlong dot (C0 AE)', withBytes('{"title": "', [0xc0, 0xae], '"}'), BAD_JSON),
      createTask('an encoded surrogate (ED A0 80)', withBytes('{"title": "', [0xed, 0xa0, 0x80], '"}'), BAD_JSON),
      createTask('a sequence cut short', withBytes('{"title": "', [0xe2, 0x82], '"}'), BAD_JSON),
      createTask('Latin-1 text declared as such', withBytes('{"title": "caf', [0xe9], '"}'), BAD_JSON,
        [['content-type', 'application/json; charset=iso-8859-1']]),
      createTask('UTF-16 with a BOM', Buffer.from(`\ufeff${task({})}`, 'utf16le'), BAD_JSON),
      createTask('a 0xFF byte, inflected', withBytes('{"title": "A ', [0xff], ' task"}'), BAD_JSON, [JSON_TYPE, CAMEL]),
      echo('a 0xFF byte in a member name', withBytes('{"first', [0xff], 'Name": "A"}'), BAD_JSON),
      login('a 0xFF byte in the e-mail', withBytes('{"session": {"email": "ada', [0xff], '@example.com", "password": "x"}}'), BAD_JSON),
      refresh('a 0xFF byte in the refresh token', withBytes('{"refresh_token": "prt_', [0xff], '"}'), BAD_JSON)
    ])
  })

  await t.test('10 000-deep nesting and 1 000 000-key objects', async (t) => {
    await runCorpus(t, corpus, [
      createTask('10 000 levels, inflected', deep, TOO_DEEP, [JSON_TYPE, CAMEL]),
      echo('10 000 levels', deep, TOO_DEEP),
      echo('10 000 nested arrays', `${'['.repeat(10_000)}${']'.repeat(10_000)}`, TOO_DEEP),
      // Login and refresh take a few KiB (GATEWAY_IDENTITY_BODY_LIMIT_BYTES): 10 000 levels are over it; 600 are not.
      login('10 000 levels, inflected', deep, TOO_LARGE, [JSON_TYPE, CAMEL]),
      refresh('10 000 levels, inflected', deep, TOO_LARGE, [JSON_TYPE, CAMEL]),
      login('600 levels, inflected', nested(600), TOO_DEEP, [JSON_TYPE, CAMEL]),
      refresh('600 levels, inflected', nested(600), TOO_DEEP, [JSON_TYPE, CAMEL]),
      createTask('10 000 levels, not inflected: the upstream refuses the shape', deep, UPSTREAM_INVALID),
      login('10 000 levels, not inflected', deep, TOO_LARGE),
      login('600 levels, not inflected: identity refuses the shape', nested(600), IDENTITY_INVALID),
      createTask('1 000 000 members, inflected', million, TOO_LARGE, [JSON_TYPE, CAMEL]),
      echo('1 000 000 members', million, TOO_LARGE),
      login('1 000 000 members, inflected', million, TOO_LARGE, [JSON_TYPE, CAMEL]),
      // GATEWAY_MAX_INFLECTED_REQUEST_MEMBERS (10 000): counted before the body is parsed, whatever the depth.
      createTask('10 001 members, inflected', manyKeys(10_001), TOO_WIDE, [JSON_TYPE, CAMEL]),
      echo('10 001 members', manyKeys(10_001), TOO_WIDE),
      echo('10 001 members spread over 10 001 objects', JSON.stringify(Array.from({ length: 10_001 }, (_, i) => ({ [`a_b${i}`]: 0 }))), TOO_WIDE),
      echo('10 001 members, 10 001 levels deep: the count comes first', nested(10_001), TOO_WIDE),
      createTask('10 001 members, not inflected: the upstream answers', manyKeys(10_001), UPSTREAM_INVALID)
    ])

    await t.test('under a 32 MiB gateway limit, 1 000 000 members are inflected and forwarded, and the upstream\'s own limit answers', async (t) => {
      const wide = await corpus.addGateway({ bodyLimitBytes: 32 * BODY_LIMIT, bufferedBodiesMaxBytes: 64 * BODY_LIMIT, maxInflectedRequestMembers: 2_000_000 })
      t.ok(Buffer.byteLength(million) < 32 * BODY_LIMIT, `the body (${Buffer.byteLength(million)} bytes) fits the raised limit`)
      await runCorpus(t, corpus, [
        createTask('1 000 000 members, inflected', million, [413, 'body_too_large', 'backoffice'], [JSON_TYPE, CAMEL]),
        createTask('10 000 levels, inflected', deep, TOO_DEEP, [JSON_TYPE, CAMEL])
      ], wide)
      assertJson(t, await wide.call('/users?per_page=1', { headers: { 'x-api-key': keys.users.key } }), 200, 'that gateway still serves')
    })
  })

  await t.test('__proto__, constructor and prototype members', async (t) => {
    const check = { check: (t: Test): void => { assertPrototypeClean(t, 'is_admin', 'isAdmin', 'title', 'polluted') } }
    await runCorpus(t, corpus, [
      createTask('__proto__', '{"title": "A task", "__proto__": {"is_admin": true}}', UPSTREAM_BAD_JSON, [JSON_TYPE], check),
      createTask('__proto__, inflected', '{"title": "A task", "__proto__": {"isAdmin": true}}', UPSTREAM_BAD_JSON, [JSON_TYPE, CAMEL], check),
      createTask('__proto__ nested in an array', '{"title": "A task", "checklist_items": [{"__proto__": {"polluted": true}}]}',
        UPSTREAM_BAD_JSON, [JSON_TYPE, CAMEL], check),
      createTask('constructor.prototype', '{"title": "A task", "constructor": {"prototype": {"is_admin": true}}}', UPSTREAM_BAD_JSON,
        [JSON_TYPE], check),
      createTask('Constructor.Prototype, which inflects to constructor.prototype',
        '{"title": "A task", "Constructor": {"Prototype": {"isAdmin": true}}}', UPSTREAM_BAD_JSON, [JSON_TYPE, CAMEL], check),
      createTask('constructor alone', task({ constructor: 'x' }), UPSTREAM_INVALID, [JSON_TYPE, CAMEL], check),
      createTask('prototype', task({ prototype: { is_admin: true } }), UPSTREAM_INVALID, [JSON_TYPE, CAMEL], check),
      patchTask('__proto__ setting the title', '{"__proto__": {"title": "Owned"}}', UPSTREAM_BAD_JSON, [JSON_TYPE, CAMEL], check),
      echo('__proto__', '{"__proto__": {"isAdmin": true}, "firstName": "A"}', UPSTREAM_BAD_JSON, [JSON_TYPE], check),
      login('__proto__', `{"session": {"email": "${ada.email}", "password": "${password}"}, "__proto__": {"is_admin": true}}`,
        IDENTITY_BAD_JSON, [JSON_TYPE], check),
      login('constructor.prototype, inflected',
        `{"session": {"email": "${ada.email}", "password": "${password}"}, "constructor": {"prototype": {"isAdmin": true}}}`,
        IDENTITY_BAD_JSON, [JSON_TYPE, CAMEL], check),
      refresh('__proto__', `{"refresh_token": "${tokens.refresh_token}", "__proto__": {"sid": "other"}}`, IDENTITY_BAD_JSON, [JSON_TYPE], check)
    ])
  })

  await t.test('e-mails with unicode, SQL and NUL characters, with ADA\'s real password', async (t) => {
    const [local, domain] = ada.email.split('@') as [string, string]
    await runCorpus(t, corpus, [
      login('a Cyrillic а in the domain', session(`${local}@ex\u0430mple.com`), WRONG_LOGIN),
      login('full-width letters', session(`\uff41\uff44\uff41@${domain}`), WRONG_LOGIN),
      login('a combining accent', session(`a\u0301da@${domain}`), WRONG_LOGIN),
      login('a right-to-left override', session(`\u202e${ada.email}`), WRONG_LOGIN),
      login('a zero-width space', session(`${local}\u200b@${domain}`), WRONG_LOGIN),
      login('SQL: a quote and a comment', session(`${ada.email}'--`), WRONG_LOGIN),
      login('SQL: OR 1=1', session("' OR '1'='1"), WRONG_LOGIN),
      login('SQL: a stacked DROP TABLE', session(`${ada.email}'; DROP TABLE users; --`), WRONG_LOGIN),
      login('SQL: a LIKE wildcard', session(`%@${domain}`), WRONG_LOGIN),
      login('SQL: a UNION', session('x\' UNION SELECT email, password_hash FROM users --'), WRONG_LOGIN),
      login('a NUL after the address', session(`${ada.email}\u0000`), WRONG_LOGIN),
      login('a NUL then another domain', session(`${ada.email}\u0000@evil.example`), WRONG_LOGIN),
      login('a NUL after the password', session(ada.email, `${password}\u0000`), WRONG_LOGIN),
      login('a CR LF header injection', session(`${ada.email}\r\nBcc: mallory@example.com`), WRONG_LOGIN),
      login('an e-mail over 254 characters', session(`${'a'.repeat(250)}@${domain}`), IDENTITY_INVALID),
      login('an empty e-mail', session(''), IDENTITY_INVALID)
    ])
  })

  await t.test('the services still serve, and nothing the corpus sent was consumed', async (t) => {
    const users = await corpus.gateway.call('/users?per_page=1', { headers: { 'x-api-key': keys.users.key } })
    assertJson(t, users, 200, 'GET /users with the users key')
    const refreshed = await corpus.gateway.call('/tokens', { bearer: tokens.access_token, body: { refresh_token: tokens.refresh_token } })
    assertJson(t, refreshed, 200, 'the refresh token sent in bad bodies was never consumed: it refreshes now')
    corpus.leaks.secret(refreshed.body.access_token, refreshed.body.refresh_token)
    const created = await corpus.gateway.call('/tasks', {
      headers: { 'x-api-key': keys.tasks.key, 'x-api-inflection': 'camel' }, body: { title: 'A task', dueOn: '2026-02-01' }
    })
    assertJson(t, created, 201, 'POST /tasks with a good body')
    t.equal(created.body.dueOn, '2026-02-01', 'inflected as usual')
    const login = await corpus.gateway.call('/sessions', { body: { session: { email: ada.email, password } } })
    assertStatus(t, login, 201, 'ADA logs in with her real e-mail and password')
    corpus.leaks.secret(login.body.access_token, login.body.refresh_token)
  })

  await corpus.leaks.assertNoLeaks(t)
})
