import t, { type Test } from 'tap'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { stringify } from 'yaml'
import { ConfigError } from '../../common/config.js'
import { parseUpstreams } from '../../gateway/routing/index.js'
import { assertProblem } from '../helpers/assert.js'
import { startGateway, startStack, type Stack, type TestGateway } from '../helpers/gateway.js'
import { rawRequest, type RawAnswer } from '../helpers/http.js'
import { tempDir } from '../helpers/temp.js'

/**
 * CORS, per upstream: the gateway answers a browser's preflight itself (no credential,
 * only the anonymous policies), puts the cors block's fields on every answer to an
 * allowed origin (its own 401, 403 and 429 included), gives a refused origin none, and
 * leaves requests without Origin as they were. A block browsers could not use safely is
 * refused when the file is loaded, naming the field.
 */
const APP = 'https://app.example.com'
const PARTNER = 'https://partner.example.com'
const EVIL = 'https://evil.example.net'

type Cors = Record<string, unknown>

function upstreams (target: string, appCors: Cors): { upstreams: unknown[] } {
  return {
    upstreams: [
      {
        name: 'app',
        target,
        routes: [
          { method: 'GET', path: '/users', permission: 'users:list' },
          { method: 'POST', path: '/users', permission: 'users:create' },
          // One call a minute per key: the second is the gateway's own 429.
          { method: 'GET', path: '/status/:code', permission: 'debug:read', policies: [{ name: 'status', kind: 'rate', limit: 1, window_seconds: 60, partition: 'key' }] }
        ],
        cors: appCors
      },
      {
        name: 'partner',
        target,
        prefix: '/partner',
        routes: [
          { method: 'GET', path: '/echo', permission: 'debug:read' },
          { method: 'POST', path: '/echo', permission: 'debug:write' }
        ],
        cors: { origins: [PARTNER], methods: ['GET'], headers: ['authorization'], credentials: true, max_age: 60 }
      },
      {
        name: 'open',
        target,
        prefix: '/open',
        routes: [{ method: 'GET', path: '/echo', permission: 'debug:read' }],
        cors: { origins: ['*'] }
      },
      {
        name: 'plain',
        target,
        routes: [{ method: 'GET', path: '/tasks', permission: 'tasks:list' }]
      }
    ]
  }
}

const APP_CORS: Cors = { origins: [APP, 'http://localhost:5173'], expose_headers: ['x-request-id', 'RateLimit'] }

async function preflight (gateway: TestGateway, path: string, origin: string, method: string, requestHeaders = 'x-api-key'): Promise<RawAnswer> {
  return await rawRequest(gateway.url, path, {
    method: 'OPTIONS',
    headers: { accept: '*/*', origin, 'access-control-request-method': method, 'access-control-request-headers': requestHeaders }
  })
}

async function call (gateway: TestGateway, path: string, headers: Record<string, string>, method = 'GET'): Promise<RawAnswer> {
  return await rawRequest(gateway.url, path, { method, headers })
}

/** The Access-Control-Allow-* (and -Expose-*, -Max-Age) fields of an answer. */
function corsFieldsOf (answer: RawAnswer): string[] {
  return Object.keys(answer.headers).filter((name) => name.startsWith('access-control-'))
}

const varies = (answer: RawAnswer, name: string): boolean => (answer.headers.vary ?? '').toLowerCase().split(/\s*,\s*/).includes(name)

async function cases (t: Test, s: Stack, gateway: TestGateway): Promise<void> {
  const key = await s.createKey(['users:list', 'debug:read'])

  t.test('an allowed origin: the preflight is answered without a key, then the real calls carry its fields', async (t) => {
    const answer = await preflight(gateway, '/users', APP, 'GET')
    t.equal(answer.status, 204, 'preflight 204 without any credential')
    t.equal(answer.headers['access-control-allow-origin'], APP, 'the origin echoed')
    t.ok(varies(answer, 'origin'), 'Vary: Origin')
    t.same(answer.headers['access-control-allow-methods']?.split(', '), ['GET', 'HEAD', 'POST'], 'by default, the methods the upstream\'s routes declare')
    t.match(answer.headers['access-control-allow-headers'], /\bx-api-key\b/, 'x-api-key allowed')
    t.match(answer.headers['access-control-allow-headers'], /\bauthorization\b/, 'authorization allowed')
    t.match(answer.headers['access-control-allow-headers'], /\bcontent-type\b/, 'content-type allowed')
    t.equal(answer.headers['access-control-max-age'], '600', 'the default max age')
    t.notOk('access-control-allow-credentials' in answer.headers, 'no credentials unless the block says so')
    t.equal(answer.text, '', 'no body')

    const post = await preflight(gateway, '/users', 'http://localhost:5173', 'POST', 'x-api-key, content-type')
    t.equal(post.status, 204, 'a preflight for POST from the other listed origin')
    t.equal(post.headers['access-control-allow-origin'], 'http://localhost:5173', 'that origin echoed')

    const ok = await call(gateway, '/users?per_page=1', { origin: APP, 'x-api-key': key.key })
    t.equal(ok.status, 200, 'the real call with a key')
    t.equal(ok.headers['access-control-allow-origin'], APP, 'ACAO on the 200, once')
    t.ok(varies(ok, 'origin'), 'Vary: Origin on the 200')
    t.equal(ok.headers['access-control-expose-headers'], 'x-request-id, ratelimit', 'the exposed headers')

    const unauthenticated = await call(gateway, '/users', { origin: APP })
    assertProblem(t, unauthenticated, 401, 'credentials_missing', 'no key: the gateway\'s 401')
    t.equal(unauthenticated.headers['access-control-allow-origin'], APP, 'ACAO on the 401, so the app can read it')
    t.equal(unauthenticated.headers['access-control-expose-headers'], 'x-request-id, ratelimit', 'and the exposed headers')

    const badKey = await call(gateway, '/users', { origin: APP, 'x-api-key': `${key.key.slice(0, -4)}AAAA` })
    t.equal(badKey.status, 401, 'a refused key: 401')
    t.equal(badKey.headers['access-control-allow-origin'], APP, 'ACAO on that 401 too')

    const denied = await call(gateway, '/users', { origin: APP, 'x-api-key': key.key, 'content-type': 'application/json' }, 'POST')
    assertProblem(t, denied, 403, 'permission_denied', 'a key without users:create')
    t.equal(denied.headers['access-control-allow-origin'], APP, 'ACAO on the 403')

    t.equal((await call(gateway, '/status/200', { origin: APP, 'x-api-key': key.key })).status, 200, 'the first call of the minute')
    const limited = await call(gateway, '/status/200', { origin: APP, 'x-api-key': key.key })
    assertProblem(t, limited, 429, 'rate_limited', 'the second: the gateway\'s 429')
    t.equal(limited.headers['access-control-allow-origin'], APP, 'ACAO on the 429')
  })

  t.test('a refused origin gets no Access-Control-Allow-* field, on the preflight or the call', async (t) => {
    const answer = await preflight(gateway, '/users', EVIL, 'GET')
    assertProblem(t, answer, 403, 'cors_preflight_refused', 'preflight from an unlisted origin')
    t.same(corsFieldsOf(answer), [], 'no CORS field')
    t.same(corsFieldsOf(await preflight(gateway, '/users', `${APP}:443`, 'GET')), [], 'an origin matches exactly or not at all')
    const partnerOnApp = await preflight(gateway, '/users', PARTNER, 'GET')
    t.equal(partnerOnApp.status, 403, 'an origin another upstream allows is not allowed here')

    const called = await call(gateway, '/users?per_page=1', { origin: EVIL, 'x-api-key': key.key })
    t.equal(called.status, 200, 'the call itself is served as any other (the browser keeps it from the page)')
    t.same(corsFieldsOf(called), [], 'with no CORS field')
    t.same(corsFieldsOf(await call(gateway, '/users', { origin: EVIL })), [], 'nor on the 401')
  })

  t.test('a preflight for a method the route does not take allows nothing', async (t) => {
    const missing = await preflight(gateway, '/users', APP, 'DELETE')
    assertProblem(t, missing, 405, 'method_not_allowed', 'a method no route of the path declares: 405, as any OPTIONS')
    t.same(corsFieldsOf(missing), [], 'no CORS field')
    const left = await preflight(gateway, '/partner/echo', PARTNER, 'POST', 'authorization')
    assertProblem(t, left, 403, 'cors_preflight_refused', 'a declared method the block leaves out: 403')
    t.same(corsFieldsOf(left), [], 'no CORS field')
    const unknown = await preflight(gateway, '/nowhere', APP, 'GET')
    assertProblem(t, unknown, 404, 'not_found', 'a path no route has: 404')
    t.same(corsFieldsOf(unknown), [], 'no CORS field')
  })

  t.test('credentials: true is said on the preflight and on every answer', async (t) => {
    const answer = await preflight(gateway, '/partner/echo', PARTNER, 'GET', 'authorization')
    t.equal(answer.status, 204, 'preflight 204')
    t.equal(answer.headers['access-control-allow-origin'], PARTNER, 'the origin echoed, never *')
    t.equal(answer.headers['access-control-allow-credentials'], 'true', 'credentials allowed')
    t.equal(answer.headers['access-control-allow-methods'], 'GET', 'the listed methods only')
    t.equal(answer.headers['access-control-allow-headers'], 'authorization', 'the listed headers only')
    t.equal(answer.headers['access-control-max-age'], '60', 'the block\'s max age')
    const called = await call(gateway, '/partner/echo', { origin: PARTNER, 'x-api-key': key.key })
    t.equal(called.status, 200, 'the real call')
    t.equal(called.headers['access-control-allow-credentials'], 'true', 'credentials on the answer')
    t.equal(called.headers['access-control-allow-origin'], PARTNER, 'and its origin')
    t.notOk('access-control-expose-headers' in called.headers, 'nothing exposed unless listed')
  })

  t.test('"*" without credentials answers every origin with *', async (t) => {
    const answer = await preflight(gateway, '/open/echo', EVIL, 'GET')
    t.equal(answer.status, 204, 'any origin')
    t.equal(answer.headers['access-control-allow-origin'], '*', 'ACAO: *')
    t.notOk('access-control-allow-credentials' in answer.headers, 'never with credentials')
    t.notOk(varies(answer, 'origin'), 'the same answer for every origin: no Vary: Origin')
    const called = await call(gateway, '/open/echo', { origin: 'http://localhost:3000', 'x-api-key': key.key })
    t.equal(called.headers['access-control-allow-origin'], '*', 'ACAO: * on the call')
  })

  t.test('requests without Origin, and upstreams without a cors block, are as before', async (t) => {
    const plain = await call(gateway, '/users?per_page=1', { 'x-api-key': key.key })
    t.equal(plain.status, 200, 'served')
    t.same(corsFieldsOf(plain), [], 'no CORS field without Origin')
    t.notOk(varies(plain, 'origin'), 'nor Vary: Origin')
    const noCors = await preflight(gateway, '/tasks', APP, 'GET')
    assertProblem(t, noCors, 405, 'method_not_allowed', 'a preflight to an upstream without cors is an OPTIONS request like any other')
    t.same(corsFieldsOf(noCors), [], 'no CORS field')
    const bare = await rawRequest(gateway.url, '/users', { method: 'OPTIONS', headers: { origin: APP } })
    assertProblem(t, bare, 405, 'method_not_allowed', 'OPTIONS without Access-Control-Request-Method is no preflight')
  })
}

t.test('CORS over real sockets', async (t) => {
  const s = await startStack(t)
  const gateway = await startGateway(t, { ...s.gatewaySetup, upstreams: upstreams(s.upstreamUrl, APP_CORS) })
  await cases(t, s, gateway)

  t.test('a preflight counts under the anonymous policies alone, never needing a key', async (t) => {
    const limited = await startGateway(t, {
      ...s.gatewaySetup,
      upstreams: upstreams(s.upstreamUrl, APP_CORS),
      options: { anonymousPolicies: [{ name: 'anonymous', kind: 'rate', limit: 2, window_seconds: 60, partition: 'ip' }] }
    })
    t.equal((await preflight(limited, '/users', APP, 'GET')).status, 204, 'first')
    t.equal((await preflight(limited, '/users', APP, 'GET')).status, 204, 'second')
    const third = await preflight(limited, '/users', APP, 'GET')
    assertProblem(t, third, 429, 'rate_limited', 'the third is past the anonymous limit')
    t.same(corsFieldsOf(third), [], 'and allows nothing')
  })

  t.test('reloading the upstreams file applies a changed cors block', async (t) => {
    const file = join(tempDir(t), 'upstreams.yaml')
    writeFileSync(file, stringify(upstreams(s.upstreamUrl, { origins: [APP] })))
    const fromFile = await startGateway(t, { ...s.gatewaySetup, upstreams: file })
    t.equal((await preflight(fromFile, '/users', APP, 'GET')).status, 204, 'allowed before')
    t.equal((await preflight(fromFile, '/users', 'https://new.example.com', 'GET')).status, 403, 'the new origin refused before')

    writeFileSync(file, stringify(upstreams(s.upstreamUrl, { origins: ['https://new.example.com'], credentials: true })))
    t.equal(fromFile.app.portierGateway.reload(), true, 'reload() accepts the new block')
    const now = await preflight(fromFile, '/users', 'https://new.example.com', 'GET')
    t.equal(now.status, 204, 'the new origin allowed after the reload')
    t.equal(now.headers['access-control-allow-credentials'], 'true', 'with credentials')
    t.same(corsFieldsOf(await preflight(fromFile, '/users', APP, 'GET')), [], 'the old origin refused')

    writeFileSync(file, stringify(upstreams(s.upstreamUrl, { origins: ['*'], credentials: true })))
    t.equal(fromFile.app.portierGateway.reload(), false, 'a block with * and credentials is rejected on reload')
    t.equal((await preflight(fromFile, '/users', 'https://new.example.com', 'GET')).status, 204, 'and the block in force stays')
  })
})

t.test('the loader refuses a cors block browsers could not use safely, naming the field', async (t) => {
  const load = (cors: Cors) => parseUpstreams(JSON.stringify(upstreams('http://127.0.0.1:4000', cors)), 'upstreams.json', 'json')
  const problemsOf = (cors: Cors): string[] => {
    try {
      load(cors)
    } catch (err) {
      if (err instanceof ConfigError) return err.problems
      throw err
    }
    return []
  }

  t.same(problemsOf({ origins: ['*'], credentials: true }),
    ['upstreams.json: upstreams[0].cors.credentials: cannot be true while origins is "*": list the origins that may call with credentials'],
    '"*" with credentials')
  t.match(problemsOf({ origins: [APP, '*'] }), [/^upstreams\.json: upstreams\[0\]\.cors\.origins\[1\]: "\*" allows every origin/], '"*" beside other origins')
  for (const [origin, why] of [
    ['app.example.com', /is not an origin: write scheme:\/\/host/],
    ['ftp://app.example.com', /scheme must be http or https/],
    [`${APP}/`, /write https:\/\/app\.example\.com \(/],
    [`${APP}/path`, /write https:\/\/app\.example\.com \(/],
    ['https://App.Example.com', /write https:\/\/app\.example\.com \(/],
    ['https://app.example.com:443', /write https:\/\/app\.example\.com \(/],
    ['https://user:pw@app.example.com', /may not hold credentials/],
    ['null', /is not an origin/]
  ] as const) {
    const problems = problemsOf({ origins: [APP, origin] })
    t.equal(problems.length, 1, `${origin}: one problem`)
    t.match(problems[0], new RegExp(`^upstreams\\.json: upstreams\\[0\\]\\.cors\\.origins\\[1\\]: .*${why.source}`), `${origin} refused, naming the field`)
  }
  t.match(problemsOf({ origins: [APP], methods: ['GET', 'DELETE'] }), [/upstreams\[0\]\.cors\.methods\[1\]: DELETE is the method of no route of this upstream/], 'a method no route declares')
  t.match(problemsOf({ origins: [APP], max_age: 100_000 }), [/upstreams\[0\]\.cors\.max_age: /], 'max_age beyond a day')
  t.match(problemsOf({ origins: [] }), [/upstreams\[0\]\.cors\.origins: must not be empty/], 'no origin')
  t.match(problemsOf({ origins: [APP], headers: ['x bad'] }), [/upstreams\[0\]\.cors\.headers\[0\]: must be a header name/], 'a header that is no header name')
  t.match(problemsOf({ origins: [APP], allow: ['x'] }), [/upstreams\[0\]\.cors\.allow: is not a known member/], 'an unknown member')

  const loaded = load({ origins: [APP, 'http://127.0.0.1:8080'], headers: ['X-Api-Key'] }).config.upstreams[0]?.cors
  t.same(loaded, {
    origins: [APP, 'http://127.0.0.1:8080'],
    methods: ['GET', 'HEAD', 'POST'],
    headers: ['x-api-key'],
    credentials: false,
    max_age: 600
  }, 'defaults: the routes\' methods (HEAD with GET), header names in lower case, no credentials, 600 s')
  t.same(load({ origins: ['*'] }).config.upstreams[0]?.cors?.headers, ['accept', 'authorization', 'content-type', 'x-api-key', 'x-api-inflection', 'x-request-id'], 'the default request headers')
})
