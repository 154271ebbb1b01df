import t, { type Test } from 'tap'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { stringify } from 'yaml'
import { ConfigError } from '../../common/config.js'
import { PERMISSION_PATTERN } from '../../common/permissions.js'
import { loadUpstreamsFile, parseUpstreams, type LoadedUpstreams, type LoadOptions } from '../../gateway/routing/index.js'
import { configProblems } from '../helpers/config-problems.js'
import { repoPath } from '../helpers/repo-root.js'

/**
 * The upstreams file: schema errors and semantic collisions, each with the file and
 * the place inside it; YAML and JSON parsing; defaults; strict vs lenient permissions.
 */
const DEFAULT_FILE = repoPath('gateway/upstreams.default.yaml')
const FILE = 'gateway.yaml'

type Member = Record<string, unknown>
interface Upstream extends Member { routes: Member[], aliases?: Record<string, unknown>, timeouts?: Member }
interface Doc extends Member { upstreams: Upstream[] }

/** A valid file, fresh for each case to change. */
function base (): Doc {
  return {
    upstreams: [{
      name: 'backoffice',
      target: 'http://127.0.0.1:4000',
      aliases: { '/utilisateurs': '/users' },
      routes: [
        { method: 'GET', path: '/users', permission: 'users:list' },
        { method: 'GET', path: '/users/:id', permission: 'users:read' },
        { method: 'POST', path: '/tasks', permission: 'tasks:create' }
      ]
    }]
  }
}

const upstream = (doc: Doc, i = 0): Upstream => doc.upstreams[i] as Upstream
const route = (doc: Doc, j: number, i = 0): Member => upstream(doc, i).routes[j] as Member

function second (changes: Partial<Upstream> = {}): Upstream {
  return { name: 'billing', target: 'http://127.0.0.1:4100', routes: [{ method: 'GET', path: '/invoices', permission: 'invoices:list' }], ...changes }
}

function problemsOfText (text: string, format: 'yaml' | 'json' = 'yaml', source = FILE, options: LoadOptions = {}): string[] {
  return configProblems(() => parseUpstreams(text, source, format, options))
}

const problemsOf = (doc: unknown, options: LoadOptions = {}): string[] => problemsOfText(stringify(doc), 'yaml', FILE, options)

/** Each case changes the valid base document one way and names the problems expected. */
function checkCases (t: Test, cases: Array<[string, (doc: Doc) => void, string[]]>): void {
  for (const [label, change, expected] of cases) {
    const doc = base()
    change(doc)
    t.same(problemsOf(doc), expected, label)
  }
}
const load = (doc: unknown, options: LoadOptions = {}): LoadedUpstreams => parseUpstreams(stringify(doc), FILE, 'yaml', options)

t.test('happy', async (t) => {
  t.test('the base file loads, with every default applied', async (t) => {
    const { config, warnings } = load(base())
    t.same(warnings, [])
    t.same(config, {
      upstreams: [{
        name: 'backoffice',
        target: 'http://127.0.0.1:4000',
        prefix: '/',
        keyCase: 'snake',
        timeouts: { connectMs: 2000, responseMs: 10000 },
        connections: 128,
        fairShare: 0.5,
        aliases: { '/utilisateurs': '/users' },
        routes: [
          { method: 'GET', path: '/users', permission: 'users:list' },
          { method: 'GET', path: '/users/:id', permission: 'users:read' },
          { method: 'POST', path: '/tasks', permission: 'tasks:create' }
        ]
      }]
    })
  })

  t.test('aliases default to none, a missing timeout to its default, an absent permission to null', async (t) => {
    const doc = base()
    delete upstream(doc).aliases
    upstream(doc).timeouts = { responseMs: 30000 }
    delete route(doc, 2).permission
    const { config } = load(doc)
    t.same(config.upstreams[0]?.aliases, {})
    t.same(config.upstreams[0]?.timeouts, { connectMs: 2000, responseMs: 30000 })
    t.equal(config.upstreams[0]?.routes[2]?.permission, null)
  })

  t.test('every member given is kept', async (t) => {
    const doc = base()
    Object.assign(upstream(doc), { target: 'https://svc.internal:8443/api/v2', prefix: '/bo', keyCase: 'camel', timeouts: { connectMs: 1, responseMs: 600000 } })
    upstream(doc).aliases = { '/utilisateurs': '/bo/users' }
    const { config } = load(doc)
    t.match(config.upstreams[0], { target: 'https://svc.internal:8443/api/v2', prefix: '/bo', keyCase: 'camel', timeouts: { connectMs: 1, responseMs: 600000 } })
  })

  t.test('the result is deeply frozen', async (t) => {
    const { config } = load(base())
    const first = config.upstreams[0]
    t.ok(Object.isFrozen(config), 'config')
    t.ok(Object.isFrozen(config.upstreams), 'upstreams list')
    t.ok(Object.isFrozen(first), 'an upstream')
    t.ok(Object.isFrozen(first?.timeouts), 'timeouts')
    t.ok(Object.isFrozen(first?.aliases), 'aliases')
    t.ok(Object.isFrozen(first?.routes[0]), 'a route')
    t.throws(() => { (first as { name: string }).name = 'x' }, TypeError)
  })

  t.test('every key case is accepted', async (t) => {
    for (const keyCase of ['camel', 'dash', 'snake', 'pascal']) {
      const doc = base()
      upstream(doc).keyCase = keyCase
      t.equal(load(doc).config.upstreams[0]?.keyCase, keyCase, keyCase)
    }
  })

  t.test('every method, and path patterns of every kind', async (t) => {
    const doc = base()
    upstream(doc).routes = [
      ...['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'].map((method) => ({ method, path: '/things', permission: 'things:*' })),
      { method: 'GET', path: '/', permission: '*' },
      { method: 'GET', path: '/users', permission: 'users:list' },
      { method: 'GET', path: '/a.b/c_d/e~f/g-h/:id/:second_id', permission: 'x:y' },
      { method: 'GET', path: '/files/*', permission: 'files:read' },
      { method: 'GET', path: '/*', permission: 'all:read' },
      { method: 'GET', path: '/.well-known/openid-configuration', permission: 'x:y' },
      { method: 'GET', path: '/administrators', permission: 'x:y' },
      { method: 'GET', path: '/metrics/daily', permission: 'x:y' },
      { method: 'GET', path: '/sessions/:id', permission: 'x:y' }
    ]
    // The base alias would hide part of `/*`.
    delete upstream(doc).aliases
    t.same(problemsOf(doc), [])
  })

  t.test('the shipped default file passes strictly, with its alias', async (t) => {
    const { config, warnings } = loadUpstreamsFile(DEFAULT_FILE, { strict: true })
    t.same(warnings, [])
    t.equal(config.upstreams.length, 1)
    t.same(config.upstreams[0]?.aliases, { '/utilisateurs': '/users' })
    t.ok(config.upstreams[0]?.routes.every((r) => r.permission !== null), 'every route has a permission')
    t.match(config.upstreams[0]?.routes, [{ method: 'GET', path: '/users', permission: 'users:list' }])
  })
})

t.test('schema errors name the file, the place and what is wrong', async (t) => {
  const cases: Array<[string, (doc: Doc) => void, string[]]> = [
    ['unknown member at the top', (d) => { d.version = 2 }, ['gateway.yaml: version: is not a known member (expected: upstreams)']],
    ['upstreams missing', (d) => { delete (d as Member).upstreams }, ['gateway.yaml: upstreams: is required']],
    ['upstreams empty', (d) => { d.upstreams = [] }, ['gateway.yaml: upstreams: must not be empty']],
    ['upstreams not a list', (d) => { (d as Member).upstreams = { name: 'x' } }, ['gateway.yaml: upstreams: must be a list']],
    ['unknown upstream member', (d) => { upstream(d).retries = 3 }, ['gateway.yaml: upstreams[0].retries: is not a known member (expected: name, target, prefix, keyCase, timeouts, bodyLimitBytes, connections, fairShare, aliases, routes, policies, cors)']],
    ['name missing', (d) => { delete upstream(d).name }, ['gateway.yaml: upstreams[0].name: is required']],
    ['name upper case', (d) => { upstream(d).name = 'BackOffice' }, ['gateway.yaml: upstreams[0].name: must be 1 to 63 characters: a lower-case letter, then lower-case letters, digits or -']],
    ['name starting with a digit', (d) => { upstream(d).name = '1bo' }, ['gateway.yaml: upstreams[0].name: must be 1 to 63 characters: a lower-case letter, then lower-case letters, digits or -']],
    ['name of 64 characters', (d) => { upstream(d).name = `b${'o'.repeat(63)}` }, ['gateway.yaml: upstreams[0].name: must be 1 to 63 characters: a lower-case letter, then lower-case letters, digits or -']],
    ['target missing', (d) => { delete upstream(d).target }, ['gateway.yaml: upstreams[0].target: is required']],
    ...['ftp://127.0.0.1:4000', '127.0.0.1:4000', 'http://user:secret@127.0.0.1:4000', 'http://127.0.0.1:4000/api?x=1', 'http://127.0.0.1:4000/#x',
      'http://127.0.0.1:4000/api//v1', 'http://127.0.0.1:4000/api/../admin', 'HTTP://127.0.0.1'].map((target): [string, (d: Doc) => void, string[]] =>
      [`target ${target}`, (d) => { upstream(d).target = target },
        ['gateway.yaml: upstreams[0].target: must be an http:// or https:// URL, optionally with a base path of static segments; no credentials, query or fragment']]),
    ['target with a bad port', (d) => { upstream(d).target = 'http://127.0.0.1:99999' }, ['gateway.yaml: upstreams[0].target: is not a valid URL']],
    ['target not a string', (d) => { upstream(d).target = 4000 }, ['gateway.yaml: upstreams[0].target: must be a string']],
    ['prefix with a trailing slash', (d) => { upstream(d).prefix = '/bo/' }, ['gateway.yaml: upstreams[0].prefix: must be / or /segments of [A-Za-z0-9._~-] (not ending in .); no parameters, no //, no trailing /']],
    ['prefix with a parameter', (d) => { upstream(d).prefix = '/:tenant' }, ['gateway.yaml: upstreams[0].prefix: must be / or /segments of [A-Za-z0-9._~-] (not ending in .); no parameters, no //, no trailing /']],
    ['keyCase kebab', (d) => { upstream(d).keyCase = 'kebab' }, ['gateway.yaml: upstreams[0].keyCase: must be one of camel, dash, snake, pascal']],
    ['timeouts unknown member', (d) => { upstream(d).timeouts = { readMs: 5 } }, ['gateway.yaml: upstreams[0].timeouts.readMs: is not a known member (expected: connectMs, responseMs)']],
    ['connectMs 0', (d) => { upstream(d).timeouts = { connectMs: 0 } }, ['gateway.yaml: upstreams[0].timeouts.connectMs: must be >= 1']],
    ['connectMs 60001', (d) => { upstream(d).timeouts = { connectMs: 60001 } }, ['gateway.yaml: upstreams[0].timeouts.connectMs: must be <= 60000']],
    ['responseMs 600001', (d) => { upstream(d).timeouts = { responseMs: 600001 } }, ['gateway.yaml: upstreams[0].timeouts.responseMs: must be <= 600000']],
    ['responseMs fractional', (d) => { upstream(d).timeouts = { responseMs: 1.5 } }, ['gateway.yaml: upstreams[0].timeouts.responseMs: must be an integer']],
    ['connectMs as a string (no coercion)', (d) => { upstream(d).timeouts = { connectMs: '2000' } }, ['gateway.yaml: upstreams[0].timeouts.connectMs: must be an integer']],
    ['alias source with a trailing slash', (d) => { upstream(d).aliases = { '/utilisateurs/': '/users' } },
      ['gateway.yaml: upstreams[0].aliases./utilisateurs/: is not a valid alias path: it must be /segments of [A-Za-z0-9._~-] (not ending in .); not /, no parameters, no //, no trailing /']],
    ['alias source /', (d) => { upstream(d).aliases = { '/': '/users' } },
      ['gateway.yaml: upstreams[0].aliases./: is not a valid alias path: it must be /segments of [A-Za-z0-9._~-] (not ending in .); not /, no parameters, no //, no trailing /']],
    ['alias source relative', (d) => { upstream(d).aliases = { utilisateurs: '/users' } },
      ['gateway.yaml: upstreams[0].aliases.utilisateurs: is not a valid alias path: it must be /segments of [A-Za-z0-9._~-] (not ending in .); not /, no parameters, no //, no trailing /']],
    ['alias target with a parameter', (d) => { upstream(d).aliases = { '/moi': '/users/:id' } },
      ['gateway.yaml: upstreams[0].aliases./moi: must be / or /segments of [A-Za-z0-9._~-] (not ending in .); no parameters, no //, no trailing /']],
    ['alias target not a string', (d) => { upstream(d).aliases = { '/utilisateurs': 1 } }, ['gateway.yaml: upstreams[0].aliases./utilisateurs: must be a string']],
    ['routes missing', (d) => { delete (upstream(d) as Member).routes }, ['gateway.yaml: upstreams[0].routes: is required']],
    ['routes empty', (d) => { upstream(d).routes = []; delete upstream(d).aliases }, ['gateway.yaml: upstreams[0].routes: must not be empty']],
    ['unknown route member', (d) => { route(d, 1).auth = 'none' }, ['gateway.yaml: upstreams[0].routes[1].auth: is not a known member (expected: method, path, permission, policies, cost, websocket)']],
    ['method lower case', (d) => { route(d, 2).method = 'post' }, ['gateway.yaml: upstreams[0].routes[2].method: must be one of GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS']],
    ['method TRACE', (d) => { route(d, 2).method = 'TRACE' }, ['gateway.yaml: upstreams[0].routes[2].method: must be one of GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS']],
    ['method missing', (d) => { delete route(d, 2).method }, ['gateway.yaml: upstreams[0].routes[2].method: is required']],
    ['path missing', (d) => { delete route(d, 2).path }, ['gateway.yaml: upstreams[0].routes[2].path: is required']],
    ...['tasks', '/tasks/', '//tasks', '/tasks//x', '/tasks/../x', '/tasks/./x', '/tasks/..', '/tasks.', '/a/*/b', '/a*', '/a/:', '/a/:1x', '/a/:id-x',
      '/a b', '/a?x=1', '/a#b', '/a;b', '/a%20b', '/é', '/*/*', ''].map((path): [string, (d: Doc) => void, string[]] =>
      [`path ${JSON.stringify(path)}`, (d) => { route(d, 2).path = path },
        ['gateway.yaml: upstreams[0].routes[2].path: must be a path pattern: / or /segments of [A-Za-z0-9._~-] (not ending in .), :param or a final *; no //, no trailing /']]),
    ...['Users:list', 'users', 'users:', ':list', 'users:list:x', 'users:*:*', '**', ''].map((permission): [string, (d: Doc) => void, string[]] =>
      [`permission ${JSON.stringify(permission)}`, (d) => { route(d, 2).permission = permission },
        [`gateway.yaml: upstreams[0].routes[2].permission: must match ${PERMISSION_PATTERN}`]]),
    ['permission a number', (d) => { route(d, 2).permission = 3 }, ['gateway.yaml: upstreams[0].routes[2].permission: must be a string or null']],
    ['permission a list', (d) => { route(d, 2).permission = ['users:list'] }, ['gateway.yaml: upstreams[0].routes[2].permission: must be a string or null']],
    ['second upstream, third route', (d) => { d.upstreams.push(second({ routes: [{ method: 'GET', path: '/a', permission: 'a:b' }, { method: 'GET', path: '/b', permission: 'a:b' }, { method: 'GET', path: '/c/', permission: 'a:b' }] })) },
      ['gateway.yaml: upstreams[1].routes[2].path: must be a path pattern: / or /segments of [A-Za-z0-9._~-] (not ending in .), :param or a final *; no //, no trailing /']]
  ]
  checkCases(t, cases)
})

t.test('the example message of the brief, and every problem at once', async (t) => {
  const doc = base()
  upstream(doc).name = 'Bad'
  route(doc, 2).permission = 'not a permission'
  upstream(doc).timeouts = { connectMs: 0, responseMs: 0 }
  doc.upstreams.push({ name: 'x', target: 'http://x' } as unknown as Upstream)
  const problems = problemsOf(doc)
  t.same(problems.sort(), [
    'gateway.yaml: upstreams[0].name: must be 1 to 63 characters: a lower-case letter, then lower-case letters, digits or -',
    `gateway.yaml: upstreams[0].routes[2].permission: must match ${PERMISSION_PATTERN}`,
    'gateway.yaml: upstreams[0].timeouts.connectMs: must be >= 1',
    'gateway.yaml: upstreams[0].timeouts.responseMs: must be >= 1',
    'gateway.yaml: upstreams[1].routes: is required'
  ])
  try {
    parseUpstreams(stringify(doc), FILE, 'yaml')
    t.fail('should throw')
  } catch (err) {
    t.type(err, ConfigError)
    const message = (err as Error).message
    t.match(message, /^Invalid configuration \(gateway\.yaml\):\n/, 'the source heads the message')
    for (const problem of problems) t.ok(message.includes(`  - ${problem}`), `the message lists: ${problem}`)
  }
})

t.test('semantic collisions', async (t) => {
  const cases: Array<[string, (doc: Doc) => void, string[]]> = [
    ['duplicate upstream names', (d) => { d.upstreams.push(second({ name: 'backoffice' })) },
      ['gateway.yaml: upstreams[1].name: "backoffice" is already the name of upstreams[0]']],
    ['the name identity is reserved', (d) => { upstream(d).name = 'identity' },
      ['gateway.yaml: upstreams[0].name: "identity" is reserved for the built-in identity routes']],
    ['the same method and path twice in one upstream', (d) => { upstream(d).routes.push({ method: 'GET', path: '/users', permission: 'users:read' }) },
      ['gateway.yaml: upstreams[0].routes[3]: GET /users is already declared at upstreams[0].routes[0]']],
    ['the same method and path in two upstreams', (d) => { d.upstreams.push(second({ routes: [{ method: 'POST', path: '/tasks', permission: 'x:y' }] })) },
      ['gateway.yaml: upstreams[1].routes[0]: POST /tasks is already declared at upstreams[0].routes[2]']],
    ['the same gateway path once the prefix is joined', (d) => {
      d.upstreams.push(second({ prefix: '/billing', routes: [{ method: 'GET', path: '/invoices/:id', permission: 'x:y' }] }))
      d.upstreams.push(second({ name: 'billing-v2', routes: [{ method: 'GET', path: '/billing/invoices/:number', permission: 'x:y' }] }))
    }, ['gateway.yaml: upstreams[2].routes[0]: GET /billing/invoices/:number is already declared at upstreams[1].routes[0]']],
    ['the prefix path itself, declared twice', (d) => {
      d.upstreams.push(second({ prefix: '/billing', routes: [{ method: 'GET', path: '/', permission: 'x:y' }] }))
      d.upstreams.push(second({ name: 'other', routes: [{ method: 'GET', path: '/billing', permission: 'x:y' }] }))
    }, ['gateway.yaml: upstreams[2].routes[0]: GET /billing is already declared at upstreams[1].routes[0]']],
    ['a parameter named twice', (d) => { route(d, 1).path = '/users/:id/tasks/:id' },
      ['gateway.yaml: upstreams[0].routes[1].path: the parameter :id appears twice']],
    ['a route under /admin', (d) => { route(d, 2).path = '/admin/users' },
      ['gateway.yaml: upstreams[0].routes[2].path: /admin/users is under /admin, which the gateway never routes']],
    ['a route on /admin itself', (d) => { route(d, 2).path = '/admin' },
      ['gateway.yaml: upstreams[0].routes[2].path: /admin is under /admin, which the gateway never routes']],
    ['a route under /internal, in another letter case', (d) => { route(d, 2).path = '/Internal/keys/verify' },
      ['gateway.yaml: upstreams[0].routes[2].path: /Internal/keys/verify is under /internal, which the gateway never routes']],
    ['a route under /admin through the prefix', (d) => { d.upstreams.push(second({ prefix: '/admin' })) },
      ['gateway.yaml: upstreams[1].prefix: /admin is under /admin, which the gateway never routes']],
    ['a prefix under /internal', (d) => { d.upstreams.push(second({ prefix: '/internal/billing', routes: [{ method: 'GET', path: '/a', permission: 'x:y' }, { method: 'GET', path: '/b', permission: 'x:y' }] })) },
      ['gateway.yaml: upstreams[1].prefix: /internal/billing is under /internal, which the gateway never routes']],
    ...['/healthz', '/readyz', '/metrics'].map((path): [string, (d: Doc) => void, string[]] =>
      [`a route on ${path}`, (d) => { route(d, 2).path = path }, [`gateway.yaml: upstreams[0].routes[2].path: ${path} is the gateway's own ${path}`]]),
    ['a route on /metrics through the prefix', (d) => { d.upstreams.push(second({ prefix: '/metrics', routes: [{ method: 'GET', path: '/', permission: 'x:y' }] })) },
      ['gateway.yaml: upstreams[1].prefix: /metrics is the gateway\'s own /metrics']],
    ['a route on /openapi.json', (d) => { route(d, 2).path = '/openapi.json' },
      ['gateway.yaml: upstreams[0].routes[2].path: /openapi.json is the gateway\'s own /openapi.json']],
    ...['/docs', '/docs/static/index.html', '/docs/:page'].map((path): [string, (d: Doc) => void, string[]] =>
      [`a route on the documentation's ${path}`, (d) => { route(d, 2).path = path },
        [`gateway.yaml: upstreams[0].routes[2].path: ${path} is under /docs, the gateway's own documentation`]]),
    ['a prefix under /docs', (d) => { d.upstreams.push(second({ prefix: '/docs/billing' })) },
      ['gateway.yaml: upstreams[1].prefix: /docs/billing is under /docs, the gateway\'s own documentation']],
    ['an alias source on /docs', (d) => { upstream(d).aliases = { '/docs': '/users' } },
      ['gateway.yaml: upstreams[0].aliases./docs: /docs is under /docs, the gateway\'s own documentation']],
    ['an alias target on /openapi.json', (d) => { upstream(d).aliases = { '/api': '/openapi.json' } },
      ['gateway.yaml: upstreams[0].aliases./api: its target /openapi.json is the gateway\'s own /openapi.json']],
    ...[['POST', '/sessions'], ['DELETE', '/sessions/current'], ['POST', '/tokens'], ['POST', '/jetons'], ['GET', '/.well-known/jwks.json'],
      ['GET', '/me'], ['GET', '/me/keys'], ['POST', '/me/keys'], ['GET', '/me/keys/:id'], ['POST', '/me/keys/:id/rotate'], ['POST', '/me/keys/:id/revoke'], ['GET', '/me/keys/:id/usage'],
      ['GET', '/me/sessions'], ['DELETE', '/me/sessions/:id'], ['POST', '/me/sessions/revoke-others']].map(([method, path]): [string, (d: Doc) => void, string[]] =>
      [`a route on identity's ${method} ${path}`, (d) => { Object.assign(route(d, 2), { method, path }) },
        [`gateway.yaml: upstreams[0].routes[2]: ${method} ${path} collides with the built-in identity route ${method} ${path}`]]),
    ['an identity path with a parameter named otherwise', (d) => { Object.assign(route(d, 2), { method: 'GET', path: '/me/keys/:keyId' }) },
      ['gateway.yaml: upstreams[0].routes[2]: GET /me/keys/:keyId collides with the built-in identity route GET /me/keys/:id']],
    ['another method on an identity path with a parameter', (d) => { Object.assign(route(d, 2), { method: 'PATCH', path: '/me/sessions/:sid' }) },
      ['gateway.yaml: upstreams[0].routes[2]: PATCH /me/sessions/:sid collides with the built-in identity route DELETE /me/sessions/:id']],
    ['another method on an identity path', (d) => { Object.assign(route(d, 2), { method: 'GET', path: '/tokens' }) },
      ['gateway.yaml: upstreams[0].routes[2]: GET /tokens collides with the built-in identity route POST /tokens']],
    ['an identity path through the prefix', (d) => { d.upstreams.push(second({ prefix: '/sessions', routes: [{ method: 'POST', path: '/', permission: 'x:y' }] })) },
      ['gateway.yaml: upstreams[1].routes[0]: POST /sessions collides with the built-in identity route POST /sessions']],
    ['the same alias in two upstreams', (d) => { d.upstreams.push(second({ aliases: { '/utilisateurs': '/invoices' } })) },
      ['gateway.yaml: upstreams[1].aliases./utilisateurs: collides with the alias declared at upstreams[0].aliases./utilisateurs']],
    ['an alias under another alias', (d) => { upstream(d).aliases = { '/utilisateurs': '/users', '/utilisateurs/moi': '/users' } },
      ['gateway.yaml: upstreams[0].aliases./utilisateurs/moi: collides with the alias declared at upstreams[0].aliases./utilisateurs']],
    ['an alias above another alias', (d) => {
      d.upstreams.push(second({ aliases: { '/utilisateurs/factures': '/invoices' } }))
      d.upstreams.push(second({ name: 'reports', routes: [{ method: 'GET', path: '/reports', permission: 'x:y' }], aliases: { '/utilisateurs': '/reports' } }))
      delete upstream(d).aliases
    }, ['gateway.yaml: upstreams[2].aliases./utilisateurs: collides with the alias declared at upstreams[1].aliases./utilisateurs/factures']],
    ['an alias on a declared route', (d) => { upstream(d).aliases = { '/tasks': '/users' } },
      ['gateway.yaml: upstreams[0].aliases./tasks: collides with the route POST /tasks declared at upstreams[0].routes[2]']],
    ['an alias in front of a route of another upstream', (d) => { d.upstreams.push(second()); upstream(d).aliases = { '/invoices': '/users' } },
      ['gateway.yaml: upstreams[0].aliases./invoices: collides with the route GET /invoices declared at upstreams[1].routes[0]']],
    ['an alias above a longer route', (d) => { upstream(d).aliases = { '/users': '/tasks' } },
      ['gateway.yaml: upstreams[0].aliases./users: collides with the route GET /users declared at upstreams[0].routes[0]']],
    ['an alias matching a parameter of a route', (d) => { upstream(d).routes.push({ method: 'GET', path: '/:tenant/reports', permission: 'x:y' }); upstream(d).aliases = { '/acme': '/users' } },
      ['gateway.yaml: upstreams[0].aliases./acme: collides with the route GET /:tenant/reports declared at upstreams[0].routes[3]']],
    ...[['/sessions', 'POST /sessions'], ['/jetons', 'POST /jetons'], ['/.well-known', 'GET /.well-known/jwks.json']].map(([source, identity]): [string, (d: Doc) => void, string[]] =>
      [`an alias on identity's ${source}`, (d) => { upstream(d).aliases = { [source as string]: '/users' } },
        [`gateway.yaml: upstreams[0].aliases.${source}: collides with the built-in identity route ${identity}`]]),
    ...['/admin', '/admin/users', '/INTERNAL'].map((source): [string, (d: Doc) => void, string[]] =>
      [`an alias source ${source}`, (d) => { upstream(d).aliases = { [source]: '/users' } },
        [`gateway.yaml: upstreams[0].aliases.${source}: ${source} is under ${source.toLowerCase().startsWith('/admin') ? '/admin' : '/internal'}, which the gateway never routes`]]),
    ['an alias source on /healthz', (d) => { upstream(d).aliases = { '/healthz': '/users' } },
      ['gateway.yaml: upstreams[0].aliases./healthz: /healthz is the gateway\'s own /healthz']],
    ['an alias target under /admin', (d) => { upstream(d).aliases = { '/gestion': '/admin/users' } },
      ['gateway.yaml: upstreams[0].aliases./gestion: its target /admin/users is under /admin, which the gateway never routes']],
    ['an alias target that starts no route', (d) => { upstream(d).aliases = { '/utilisateurs': '/usres' } },
      ['gateway.yaml: upstreams[0].aliases./utilisateurs: its target /usres is not the start of any route of this upstream']],
    ['an alias target below every route', (d) => { upstream(d).aliases = { '/utilisateurs': '/users/7/tasks' } },
      ['gateway.yaml: upstreams[0].aliases./utilisateurs: its target /users/7/tasks is not the start of any route of this upstream']],
    ['an alias target that starts a route of another upstream only', (d) => { d.upstreams.push(second()); upstream(d).aliases = { '/factures': '/invoices' } },
      ['gateway.yaml: upstreams[0].aliases./factures: its target /invoices is not the start of any route of this upstream']]
  ]
  checkCases(t, cases)

  t.test('paths that only look like the documentation are an upstream\'s', async (t) => {
    for (const path of ['/docsearch', '/api/docs', '/api/openapi.json', '/openapi.yaml']) {
      const doc = base()
      route(doc, 2).path = path
      t.same(problemsOf(doc), [], path)
    }
  })

  t.test('alias targets that do start a route', async (t) => {
    for (const target of ['/users', '/users/7', '/', '/tasks']) {
      const doc = base()
      upstream(doc).aliases = { '/utilisateurs': target }
      t.same(problemsOf(doc), [], target)
    }
    const doc = base()
    upstream(doc).prefix = '/bo'
    upstream(doc).aliases = { '/utilisateurs': '/bo/users' }
    t.same(problemsOf(doc), [], 'a target under the prefix')
    upstream(doc).aliases = { '/utilisateurs': '/users' }
    t.same(problemsOf(doc), ['gateway.yaml: upstreams[0].aliases./utilisateurs: its target /users is not the start of any route of this upstream'],
      'a target is a gateway path, prefix included')
  })
})

t.test('upstream paths under /admin or /internal, after the prefix is taken off or a base path put on', async (t) => {
  const sent = (where: string, label: string, upstreamPath: string, reserved: string): string =>
    `gateway.yaml: ${where}: ${label} is sent upstream as ${upstreamPath}, under ${reserved}, which the gateway never sends upstream`
  const open = (where: string, label: string, upstreamPath: string, segment: string): string =>
    `gateway.yaml: ${where}: ${label} is sent upstream as ${upstreamPath}, whose first segment ${segment} could be admin or internal ` +
    '(which the gateway never sends upstream): start the route with a static segment, or give the target a base path'
  const basePath = (where: string, path: string, reserved: string): string =>
    `gateway.yaml: ${where}: its base path ${path} is under ${reserved}, which the gateway never sends upstream`
  const r = (path: string): Member => ({ method: 'GET', path, permission: 'x:y' })
  checkCases(t, [
    ['the prefix taken off leaves /admin', (d) => { d.upstreams.push(second({ prefix: '/billing', routes: [r('/admin/keys')] })) },
      [sent('upstreams[1].routes[0].path', 'GET /billing/admin/keys', '/admin/keys', '/admin')]],
    ['the prefix taken off leaves /ADMIN itself', (d) => { d.upstreams.push(second({ prefix: '/billing', routes: [r('/ADMIN')] })) },
      [sent('upstreams[1].routes[0].path', 'GET /billing/ADMIN', '/ADMIN', '/admin')]],
    ['the prefix taken off leaves /Internal/', (d) => { d.upstreams.push(second({ prefix: '/a/b', routes: [r('/Internal/keys/verify')] })) },
      [sent('upstreams[1].routes[0].path', 'GET /a/b/Internal/keys/verify', '/Internal/keys/verify', '/internal')]],
    ['a base path /admin', (d) => { d.upstreams.push(second({ target: 'http://127.0.0.1:4100/admin' })) },
      [basePath('upstreams[1].target', '/admin', '/admin')]],
    ['a base path /ADMIN/ with its trailing slash', (d) => { d.upstreams.push(second({ target: 'http://127.0.0.1:4100/ADMIN/', prefix: '/x' })) },
      [basePath('upstreams[1].target', '/ADMIN', '/admin')]],
    ['a base path under /internal/', (d) => { d.upstreams.push(second({ target: 'https://identity.example:3002/internal/keys', routes: [r('/'), r('/verify')] })) },
      [basePath('upstreams[1].target', '/internal/keys', '/internal')]],
    ['a parameter first, once the prefix is taken off', (d) => { d.upstreams.push(second({ prefix: '/svc', routes: [r('/:tenant/keys')] })) },
      [open('upstreams[1].routes[0].path', 'GET /svc/:tenant/keys', '/:tenant/keys', ':tenant')]],
    ['a wildcard first, once the prefix is taken off', (d) => { d.upstreams.push(second({ prefix: '/svc', routes: [r('/*')] })) },
      [open('upstreams[1].routes[0].path', 'GET /svc/*', '/*', '*')]],
    ['the prefix path itself with a wildcard under it, on each method', (d) => {
      d.upstreams.push(second({ prefix: '/svc', routes: [r('/'), { method: 'POST', path: '/*', permission: 'x:y' }] }))
    }, [open('upstreams[1].routes[1].path', 'POST /svc/*', '/*', '*')]],
    ['an alias whose target is sent upstream under /admin', (d) => {
      d.upstreams.push(second({ prefix: '/svc', routes: [r('/Admin/users')], aliases: { '/gestion': '/svc/Admin' } }))
    }, [sent('upstreams[1].routes[0].path', 'GET /svc/Admin/users', '/Admin/users', '/admin'),
      'gateway.yaml: upstreams[1].aliases./gestion: its target /svc/Admin is sent upstream as /Admin, under /admin, which the gateway never sends upstream']],
    ['an alias in front of a wildcard, to /internal', (d) => {
      d.upstreams.push(second({ prefix: '/svc', routes: [r('/*')], aliases: { '/verify': '/svc/internal/keys' } }))
    }, [open('upstreams[1].routes[0].path', 'GET /svc/*', '/*', '*'),
      'gateway.yaml: upstreams[1].aliases./verify: its target /svc/internal/keys is sent upstream as /internal/keys, under /internal, which the gateway never sends upstream']]
  ])

  t.test('paths that cannot reach /admin or /internal upstream load', async (t) => {
    const safe: Array<[string, Upstream]> = [
      ['a segment that only starts like admin', second({ prefix: '/svc', routes: [r('/administrators'), r('/internals/:id')] })],
      ['a base path before a parameter or wildcard', second({ target: 'http://127.0.0.1:4100/api', prefix: '/svc', routes: [r('/:tenant/keys'), r('/x/*')] })],
      ['a base path before admin', second({ target: 'http://127.0.0.1:4100/api', prefix: '/svc', routes: [r('/admin/keys')] })],
      ['the gateway path sent as is (prefix /, no base path): the gateway refuses /admin requests itself', second({ routes: [r('/*')] })],
      ['a parameter first, sent as is', second({ routes: [r('/:tenant/reports')] })],
      ['a static segment first after the prefix', second({ prefix: '/svc', routes: [r('/v1/*'), r('/v1/:id')] })]
    ]
    for (const [label, extra] of safe) {
      const doc = base()
      // The base file's alias would sit in front of the catch-alls.
      delete upstream(doc).aliases
      doc.upstreams.push(extra)
      t.same(problemsOf(doc), [], label)
    }
  })
})

t.test('a route without a permission', async (t) => {
  const doc = base()
  route(doc, 1).permission = null
  delete route(doc, 2).permission
  const expected = [
    'gateway.yaml: upstreams[0].routes[1].permission: GET /users/:id declares no permission, so the gateway denies it to every caller',
    'gateway.yaml: upstreams[0].routes[2].permission: POST /tasks declares no permission, so the gateway denies it to every caller'
  ]
  const lenient = load(doc)
  t.same(lenient.warnings, expected, 'loads, with a warning per route')
  t.equal(lenient.config.upstreams[0]?.routes[1]?.permission, null)
  t.same(load(doc, { strict: false }).warnings, expected, 'strict: false is the default')
  t.same(problemsOf(doc, { strict: true }), expected, 'strict: the same lines are errors')

  route(doc, 0).method = 'get'
  t.same(problemsOf(doc, { strict: true }), ['gateway.yaml: upstreams[0].routes[0].method: must be one of GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS'],
    'schema errors come first, alone')
  route(doc, 0).method = 'GET'
  upstream(doc).aliases = { '/usres': '/nope' }
  t.same(problemsOf(doc, { strict: true }).sort(), [...expected, 'gateway.yaml: upstreams[0].aliases./usres: its target /nope is not the start of any route of this upstream'].sort(),
    'under strict, with the other semantic problems')
})

t.test('YAML', async (t) => {
  t.test('a syntax error gives the line and column', async (t) => {
    const text = 'upstreams:\n  - name: backoffice\n    target: [http://x\n    routes: []\n'
    const problems = problemsOfText(text)
    t.equal(problems.length, 1)
    t.match(problems[0], /^gateway\.yaml: line 4, column \d+: /)
  })

  t.test('a tab indentation error gives the line', async (t) => {
    const problems = problemsOfText('upstreams:\n\t- name: x\n')
    t.match(problems[0], /^gateway\.yaml: line 2, column 1: /)
  })

  t.test('duplicate keys are errors, with their line', async (t) => {
    const text = stringify(base()) + 'upstreams: []\n'
    t.match(problemsOfText(text), [/^gateway\.yaml: line \d+, column 1: Map keys must be unique$/])
    const nested = 'upstreams:\n  - name: backoffice\n    target: http://x\n    routes:\n      - { method: GET, path: /users, permission: users:list, permission: "*" }\n'
    t.same(problemsOfText(nested), ['gateway.yaml: line 5, column 62: Map keys must be unique'])
  })

  t.test('anchors and aliases are refused', async (t) => {
    const text = [
      'upstreams:',
      '  - name: backoffice',
      '    target: http://x',
      '    routes:',
      '      - &read { method: GET, path: /users, permission: users:list }',
      '      - *read'
    ].join('\n')
    t.same(problemsOfText(text), [
      'gateway.yaml: line 5, column 15: YAML anchors (&read) are not supported; write the value out',
      'gateway.yaml: line 6, column 9: YAML aliases (*read) are not supported; write the value out'
    ])
  })

  t.test('merge keys are not merged: << is an unknown member', async (t) => {
    const text = [
      'upstreams:',
      '  - name: backoffice',
      '    target: http://x',
      '    routes:',
      '      - { method: GET, path: /users, permission: users:list, <<: { permission: "*" } }'
    ].join('\n')
    t.same(problemsOfText(text), ['gateway.yaml: upstreams[0].routes[0].<<: is not a known member (expected: method, path, permission, policies, cost, websocket)'])
  })

  t.test('tags are refused, standard or custom', async (t) => {
    const head = 'upstreams:\n  - name: backoffice\n    target: http://x\n    routes:\n'
    t.match(problemsOfText(`${head}      - { method: GET, path: /users, permission: !!binary dXNlcnM6bGlzdA== }\n`), [/^gateway\.yaml: line 5, column \d+: YAML tags \(tag:yaml\.org,2002:binary\) are not supported$/])
    t.match(problemsOfText(`${head}      - { method: GET, path: /users, permission: !js/function "x" }\n`), [/^gateway\.yaml: line 5, column \d+: Unresolved tag: !js\/function$/])
    t.match(problemsOfText(`${head}      - { method: GET, path: /users, permission: !!str users:list }\n`), [/YAML tags \(tag:yaml\.org,2002:str\) are not supported$/])
  })

  t.test('directives are refused; YAML 1.1 cannot switch on yes/no booleans or merges', async (t) => {
    const text = `%YAML 1.1\n---\n${stringify(base())}`
    t.same(problemsOfText(text), ['gateway.yaml: YAML directives (%YAML, %TAG) are not supported'])
    t.same(problemsOfText(`%TAG !e! tag:example.com,2000:\n---\n${stringify(base())}`), ['gateway.yaml: YAML directives (%YAML, %TAG) are not supported'])
  })

  t.test('several documents in one file are refused', async (t) => {
    t.match(problemsOfText(`${stringify(base())}---\n${stringify(base())}`), [/^gateway\.yaml: line \d+, column 1: Source contains multiple documents/])
  })

  t.test('an empty file, or one that is not a map', async (t) => {
    t.same(problemsOfText(''), ['gateway.yaml: the file is empty: it must declare upstreams'])
    t.same(problemsOfText('# nothing yet\n'), ['gateway.yaml: the file is empty: it must declare upstreams'])
    t.same(problemsOfText('- name: x\n'), ['gateway.yaml: the document must be an object (a map of members)'])
    t.same(problemsOfText('just text\n'), ['gateway.yaml: the document must be an object (a map of members)'])
  })

  t.test('__proto__ is an ordinary unknown member', async (t) => {
    const text = 'upstreams:\n  - name: backoffice\n    target: http://x\n    __proto__: { prefix: /admin }\n    routes:\n      - { method: GET, path: /users, permission: users:list }\n'
    t.same(problemsOfText(text), ['gateway.yaml: upstreams[0].__proto__: is not a known member (expected: name, target, prefix, keyCase, timeouts, bodyLimitBytes, connections, fairShare, aliases, routes, policies, cors)'])
    t.equal(({} as Member).prefix, undefined, 'no prototype was touched')
  })

  t.test('1.2 core scalars: yes stays a string', async (t) => {
    const text = 'upstreams:\n  - name: backoffice\n    target: http://x\n    routes:\n      - { method: GET, path: /users, permission: yes }\n'
    t.same(problemsOfText(text), [`gateway.yaml: upstreams[0].routes[0].permission: must match ${PERMISSION_PATTERN}`])
  })
})

t.test('JSON', async (t) => {
  t.test('a JSON document loads like its YAML twin', async (t) => {
    const doc = base()
    t.same(parseUpstreams(JSON.stringify(doc, null, 2), 'gateway.json', 'json').config, load(doc).config)
  })

  t.test('syntax errors give the line and column', async (t) => {
    const problems = problemsOfText('{\n  "upstreams": [\n    { "name": "x", }\n  ]\n}', 'json', 'gateway.json')
    t.equal(problems.length, 1)
    t.match(problems[0], /^gateway\.json: line 3, column 20: invalid JSON: /)
  })

  t.test('duplicate keys are errors, with their line', async (t) => {
    const text = JSON.stringify(base(), null, 2).replace('"name": "backoffice",', '"name": "backoffice",\n      "name": "other",')
    t.same(problemsOfText(text, 'json', 'gateway.json'), ['gateway.json: line 5, column 7: "name" appears twice in the same object'])
    const nested = '{"upstreams": [{"name": "a\\"{[", "target": "http://x", "routes": [{"method": "GET", "path": "/a", "method": "POST"}]}]}'
    t.same(problemsOfText(nested, 'json', 'gateway.json'), ['gateway.json: line 1, column 99: "method" appears twice in the same object'],
      'inside lists, past strings holding quotes and brackets')
    const apart = '{"upstreams": [{"name": "a", "target": "http://x", "routes": [{"method": "GET", "path": "/a"}, {"method": "GET", "path": "/b"}]}]}'
    t.same(problemsOfText(apart, 'json', 'gateway.json'), [], 'the same name in two objects is fine')
  })

  t.test('schema errors name the JSON file', async (t) => {
    const doc = base()
    route(doc, 0).method = 'get'
    t.same(problemsOfText(JSON.stringify(doc), 'json', 'gateway.json'),
      ['gateway.json: upstreams[0].routes[0].method: must be one of GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS'])
  })

  t.test('a byte-order mark is not content', async (t) => {
    t.same(problemsOfText(`\ufeff${JSON.stringify(base())}`, 'json', 'gateway.json'), [])
    t.same(problemsOfText(`\ufeff${stringify(base())}`), [])
  })
})

t.test('files', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'portier-routing-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const write = (name: string, text: string): string => {
    const file = join(dir, name)
    writeFileSync(file, text)
    return file
  }

  t.test('.yaml, .yml and .json by extension, in any letter case', async (t) => {
    const expected = load(base()).config
    t.same(loadUpstreamsFile(write('a.yaml', stringify(base()))).config, expected, '.yaml')
    t.same(loadUpstreamsFile(write('a.yml', stringify(base()))).config, expected, '.yml')
    t.same(loadUpstreamsFile(write('a.json', JSON.stringify(base()))).config, expected, '.json')
    t.same(loadUpstreamsFile(write('b.YAML', stringify(base()))).config, expected, '.YAML')
  })

  t.test('the extension chooses the parser', async (t) => {
    // YAML is not JSON: read as JSON, it is a syntax error.
    const file = write('yaml-content.json', stringify(base()))
    t.throws(() => loadUpstreamsFile(file), { name: 'ConfigError', problems: [new RegExp(`^${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(: line 1, column \\d+)?: invalid JSON: `)] })
  })

  t.test('problems name the file path as given', async (t) => {
    const doc = base()
    route(doc, 2).permission = null
    const file = write('lenient.yaml', stringify(doc))
    t.same(loadUpstreamsFile(file).warnings, [`${file}: upstreams[0].routes[2].permission: POST /tasks declares no permission, so the gateway denies it to every caller`])
    t.throws(() => loadUpstreamsFile(file, { strict: true }), {
      name: 'ConfigError',
      message: `Invalid configuration (${file}):\n  - ${file}: upstreams[0].routes[2].permission: POST /tasks declares no permission, so the gateway denies it to every caller`
    })
  })

  t.test('an unknown extension is refused, naming the allowed ones', async (t) => {
    for (const name of ['gateway.toml', 'gateway', 'gateway.yaml.bak', 'gateway.txt']) {
      const file = write(name, stringify(base()))
      t.throws(() => loadUpstreamsFile(file), { name: 'ConfigError', problems: [`${file}: unknown file type: the upstreams file must end in .yaml, .yml, .json`] }, name)
    }
  })

  t.test('a missing file, or a directory', async (t) => {
    const missing = join(dir, 'nope.yaml')
    t.throws(() => loadUpstreamsFile(missing), { name: 'ConfigError', problems: [`${missing}: cannot be read: no such file`] })
    const folder = join(dir, 'folder.yaml')
    mkdirSync(folder)
    t.throws(() => loadUpstreamsFile(folder), { name: 'ConfigError', problems: [`${folder}: cannot be read: is a directory`] })
  })
})
