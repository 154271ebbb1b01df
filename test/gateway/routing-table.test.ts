import t from 'tap'
import { buildRouteTable, normalisePath, parseUpstreams, type RouteMatch, type RouteTable, type UpstreamConfig, type UpstreamsConfig } from '../../gateway/routing/index.js'

/**
 * The route table: static, parameter and wildcard patterns, aliases by whole segments,
 * HEAD through GET, 405 with Allow, identity's built-in routes, the reserved prefixes,
 * and the exact path sent upstream.
 */
const IDENTITY_ORIGIN = 'http://127.0.0.1:3001'

const CONFIG_YAML = `
upstreams:
  - name: backoffice
    target: http://127.0.0.1:4000
    aliases:
      /utilisateurs: /users
      /v1: /
    routes:
      - { method: GET,    path: /users,            permission: users:list }
      - { method: GET,    path: /users/:id,        permission: users:read }
      - { method: POST,   path: /users,            permission: users:create }
      - { method: PATCH,  path: /users/:id,        permission: users:update }
      - { method: DELETE, path: /users/:id,        permission: users:delete }
      - { method: GET,    path: /users/:id/tasks,  permission: tasks:list }
      - { method: GET,    path: /reports/*,        permission: null }
      - { method: GET,    path: /files,            permission: files:list }
      - { method: HEAD,   path: /files,            permission: files:head }
      - { method: GET,    path: /,                 permission: home:read }
  - name: billing
    target: https://billing.internal:8443/api/v2
    prefix: /billing
    keyCase: camel
    timeouts: { connectMs: 500, responseMs: 3000 }
    aliases:
      /factures: /billing/invoices
    routes:
      - { method: GET,  path: /,               permission: billing:read }
      - { method: GET,  path: /invoices,       permission: invoices:list }
      - { method: GET,  path: /invoices/:id,   permission: invoices:read }
      - { method: PUT,  path: /invoices/:id,   permission: invoices:update }
      - { method: POST, path: /exports/*,      permission: exports:create }
`

const config = parseUpstreams(CONFIG_YAML, 'gateway.yaml', 'yaml').config
const table = buildRouteTable(config, { identityOrigin: IDENTITY_ORIGIN })

type RouteHit = Extract<RouteMatch, { kind: 'route' }>

/** Asserts a route match and returns it. */
function hit (t: Tap, table: RouteTable, method: string, path: string, expected: { pattern: string, permission?: string | null, upstream?: string, upstreamPath: string, method?: string }): RouteHit | undefined {
  const found = table.match(method, path)
  if (found.kind !== 'route') {
    t.fail(`${method} ${path} should match ${expected.pattern}`, { found })
    return undefined
  }
  t.match(found, {
    route: { method: expected.method ?? method, pattern: expected.pattern, ...(expected.permission !== undefined ? { permission: expected.permission } : {}), ...(expected.upstream !== undefined ? { upstream: { name: expected.upstream } } : {}) },
    upstreamPath: expected.upstreamPath
  }, `${method} ${path} → ${expected.pattern} → ${expected.upstreamPath}`)
  t.equal(found.upstreamPath, expected.upstreamPath, `${method} ${path}: upstream path exactly ${expected.upstreamPath}`)
  return found
}
type Tap = Pick<typeof t, 'fail' | 'match' | 'equal'>

t.test('static, parameter and wildcard routes', async (t) => {
  hit(t, table, 'GET', '/users', { pattern: '/users', permission: 'users:list', upstream: 'backoffice', upstreamPath: '/users' })
  hit(t, table, 'POST', '/users', { pattern: '/users', permission: 'users:create', upstreamPath: '/users' })
  hit(t, table, 'GET', '/users/42', { pattern: '/users/:id', permission: 'users:read', upstreamPath: '/users/42' })
  hit(t, table, 'PATCH', '/users/42', { pattern: '/users/:id', permission: 'users:update', upstreamPath: '/users/42' })
  hit(t, table, 'GET', '/users/42/tasks', { pattern: '/users/:id/tasks', permission: 'tasks:list', upstreamPath: '/users/42/tasks' })
  hit(t, table, 'GET', '/reports/2026/q1', { pattern: '/reports/*', permission: null, upstreamPath: '/reports/2026/q1' })
  hit(t, table, 'GET', '/', { pattern: '/', permission: 'home:read', upstreamPath: '/' })
  t.same(table.match('GET', '/reports'), { kind: 'not_found' }, 'a wildcard needs at least one character after its /')
  t.same(table.match('GET', '/users/42/tasks/7'), { kind: 'not_found' }, 'a parameter is one segment')
  t.same(table.match('GET', '/nothing'), { kind: 'not_found' })
})

t.test('the route is the configured one, with its upstream resolved', async (t) => {
  const found = hit(t, table, 'GET', '/billing/invoices/7', { pattern: '/billing/invoices/:id', upstreamPath: '/api/v2/invoices/7' })
  t.same(found?.route, {
    method: 'GET',
    pattern: '/billing/invoices/:id',
    permission: 'invoices:read',
    auth: 'required',
    grantedBy: ['invoices:read', 'invoices:*', '*'],
    websocket: false,
    upstream: {
      name: 'billing', origin: 'https://billing.internal:8443', basePath: '/api/v2', keyCase: 'camel', timeouts: { connectMs: 500, responseMs: 3000 }, bodyLimitBytes: null, connections: 128, fairShare: 0.5
    },
    traffic: { policies: [], cost: 1 }
  })
  t.ok(Object.isFrozen(found?.route), 'the route is frozen')
  t.ok(Object.isFrozen(found?.route.upstream), 'its upstream is frozen')
})

t.test('the upstream path: base path + path without the prefix, escapes as received', async (t) => {
  hit(t, table, 'GET', '/billing', { pattern: '/billing', permission: 'billing:read', upstreamPath: '/api/v2' })
  hit(t, table, 'GET', '/billing/invoices', { pattern: '/billing/invoices', upstreamPath: '/api/v2/invoices' })
  hit(t, table, 'POST', '/billing/exports/a/b', { pattern: '/billing/exports/*', upstreamPath: '/api/v2/exports/a/b' })
  hit(t, table, 'GET', '/users/a%20b', { pattern: '/users/:id', upstreamPath: '/users/a%20b' })
  hit(t, table, 'GET', '/users/%C3%A9t%C3%A9', { pattern: '/users/:id', upstreamPath: '/users/%C3%A9t%C3%A9' })
  hit(t, table, 'GET', '/users/a%3Fb%23c', { pattern: '/users/:id', upstreamPath: '/users/a%3Fb%23c' })
  t.same(table.match('GET', '/invoices'), { kind: 'not_found' }, 'the prefix is part of the gateway path')
  t.same(table.match('GET', '/billingx/invoices'), { kind: 'not_found' })
})

t.test('aliases resolve by whole segments, before matching', async (t) => {
  hit(t, table, 'GET', '/utilisateurs', { pattern: '/users', permission: 'users:list', upstreamPath: '/users' })
  hit(t, table, 'GET', '/utilisateurs/42', { pattern: '/users/:id', permission: 'users:read', upstreamPath: '/users/42' })
  hit(t, table, 'POST', '/utilisateurs', { pattern: '/users', permission: 'users:create', upstreamPath: '/users' })
  hit(t, table, 'GET', '/utilisateurs/42/tasks', { pattern: '/users/:id/tasks', upstreamPath: '/users/42/tasks' })
  hit(t, table, 'GET', '/factures/9', { pattern: '/billing/invoices/:id', upstreamPath: '/api/v2/invoices/9' })
  hit(t, table, 'GET', '/v1', { pattern: '/', permission: 'home:read', upstreamPath: '/' })
  hit(t, table, 'GET', '/v1/users/3', { pattern: '/users/:id', upstreamPath: '/users/3' })
  t.same(table.match('GET', '/utilisateursX'), { kind: 'not_found' }, 'not an alias: the segment is longer')
  t.same(table.match('GET', '/utilisateursX/42'), { kind: 'not_found' })
  t.same(table.match('GET', '/Utilisateurs'), { kind: 'not_found' }, 'aliases are case-sensitive')
  t.same(table.match('GET', '/x/utilisateurs'), { kind: 'not_found' }, 'aliases match from the start only')
  t.same(table.match('PUT', '/utilisateurs'), { kind: 'method_not_allowed', allow: ['GET', 'HEAD', 'POST'] }, '405 on the canonical path')
})

t.test('matching is case-sensitive', async (t) => {
  t.same(table.match('GET', '/USERS'), { kind: 'not_found' })
  t.same(table.match('GET', '/Users/1'), { kind: 'not_found' })
})

t.test('HEAD is allowed wherever GET is, unless HEAD is declared', async (t) => {
  hit(t, table, 'HEAD', '/users', { pattern: '/users', permission: 'users:list', upstreamPath: '/users' })
  hit(t, table, 'HEAD', '/utilisateurs/5', { pattern: '/users/:id', permission: 'users:read', upstreamPath: '/users/5' })
  hit(t, table, 'HEAD', '/reports/x', { pattern: '/reports/*', permission: null, upstreamPath: '/reports/x' })
  hit(t, table, 'HEAD', '/files', { pattern: '/files', permission: 'files:head', upstreamPath: '/files' })
  hit(t, table, 'GET', '/files', { pattern: '/files', permission: 'files:list', upstreamPath: '/files' })
  hit(t, table, 'HEAD', '/.well-known/jwks.json', { pattern: '/.well-known/jwks.json', permission: null, upstreamPath: '/.well-known/jwks.json' })
  t.same(table.match('HEAD', '/billing/exports/x'), { kind: 'method_not_allowed', allow: ['POST'] }, 'not where only POST is')
})

t.test('method not allowed lists the methods of the path', async (t) => {
  t.same(table.match('PUT', '/users'), { kind: 'method_not_allowed', allow: ['GET', 'HEAD', 'POST'] })
  t.same(table.match('POST', '/users/1'), { kind: 'method_not_allowed', allow: ['GET', 'HEAD', 'PATCH', 'DELETE'] })
  t.same(table.match('DELETE', '/billing/invoices/1'), { kind: 'method_not_allowed', allow: ['GET', 'HEAD', 'PUT'] })
  t.same(table.match('OPTIONS', '/reports/a'), { kind: 'method_not_allowed', allow: ['GET', 'HEAD'] })
  t.same(table.match('TRACE', '/users'), { kind: 'method_not_allowed', allow: ['GET', 'HEAD', 'POST'] }, 'a method no route can have')
  t.same(table.match('get', '/users'), { kind: 'method_not_allowed', allow: ['GET', 'HEAD', 'POST'] }, 'methods are upper case')
  t.same(table.match('GET', '/sessions'), { kind: 'method_not_allowed', allow: ['POST'] }, 'identity paths too')
})

t.test("identity's built-in routes", async (t) => {
  const identity = { name: 'identity', origin: IDENTITY_ORIGIN, basePath: '', keyCase: 'snake', timeouts: { connectMs: 2000, responseMs: 10000 }, bodyLimitBytes: null, connections: 128, fairShare: 0.5 }
  for (const [method, path] of [['POST', '/sessions'], ['DELETE', '/sessions/current'], ['POST', '/tokens'], ['POST', '/jetons'], ['GET', '/.well-known/jwks.json']] as const) {
    const found = table.match(method, path)
    t.same(found, { kind: 'route', route: { method, pattern: path, permission: null, auth: 'none', grantedBy: [], websocket: false, upstream: identity, traffic: { policies: [], cost: 1 } }, upstreamPath: path }, `${method} ${path}`)
  }
  // Self-service: paths with an id, forwarded as requested.
  for (const [method, pattern, path] of [['GET', '/me', '/me'], ['GET', '/me/keys', '/me/keys'], ['POST', '/me/keys', '/me/keys'],
    ['GET', '/me/keys/:id', '/me/keys/key_7'], ['POST', '/me/keys/:id/rotate', '/me/keys/key_7/rotate'], ['POST', '/me/keys/:id/revoke', '/me/keys/k/revoke'],
    ['GET', '/me/keys/:id/usage', '/me/keys/key_7/usage'],
    ['GET', '/me/sessions', '/me/sessions'], ['DELETE', '/me/sessions/:id', '/me/sessions/ses_1'], ['POST', '/me/sessions/revoke-others', '/me/sessions/revoke-others']] as const) {
    t.same(table.match(method, path), { kind: 'route', route: { method, pattern, permission: null, auth: 'none', grantedBy: [], websocket: false, upstream: identity, traffic: { policies: [], cost: 1 } }, upstreamPath: path }, `${method} ${path}`)
  }
  t.same(table.match('DELETE', '/me/keys/key_7'), { kind: 'method_not_allowed', allow: ['GET', 'HEAD'] }, 'a key is revoked by POST, not DELETE')
  t.same(table.match('GET', '/me/sessions/revoke-others'), { kind: 'method_not_allowed', allow: ['POST', 'DELETE'] }, 'the static segment and the id share a path')
  const bare = buildRouteTable({ upstreams: [] }, { identityOrigin: 'http://identity.local:3001/ignored/path' })
  t.same(bare.match('POST', '/jetons'), { kind: 'route', route: { method: 'POST', pattern: '/jetons', permission: null, auth: 'none', grantedBy: [], websocket: false, upstream: { ...identity, origin: 'http://identity.local:3001' }, traffic: { policies: [], cost: 1 } }, upstreamPath: '/jetons' },
    'present with no upstream at all; only the origin of identityOrigin counts')
  t.same(bare.match('GET', '/sessions/current'), { kind: 'method_not_allowed', allow: ['DELETE'] })
})

t.test('/admin and /internal never match, whatever the config says', async (t) => {
  // Built by hand, past the loader's checks, as a careless host app might.
  const route = (method: string, path: string): UpstreamConfig['routes'][number] => ({ method, path, permission: '*' })
  const careless: UpstreamsConfig = {
    upstreams: [{
      name: 'careless',
      target: 'http://127.0.0.1:4000',
      prefix: '/',
      keyCase: 'snake',
      timeouts: { connectMs: 2000, responseMs: 10000 },
      connections: 128,
      fairShare: 0.5,
      aliases: { '/gestion': '/admin', '/interne': '/internal/keys', '/Gestion': '/ADMIN' },
      routes: [route('GET', '/admin/*'), route('GET', '/admin'), route('POST', '/internal/keys/verify'), route('GET', '/*'), route('GET', '/ADMIN')]
    }]
  }
  const unsafe = buildRouteTable(careless, { identityOrigin: IDENTITY_ORIGIN })
  for (const path of ['/admin', '/admin/users', '/internal/keys/verify', '/ADMIN', '/Admin/users', '/iNtErNaL/x', '/gestion', '/gestion/users', '/interne/verify', '/Gestion']) {
    for (const method of ['GET', 'POST', 'HEAD']) t.same(unsafe.match(method, path), { kind: 'not_found' }, `${method} ${path}`)
  }
  hit(t, unsafe, 'GET', '/administrators', { pattern: '/*', upstreamPath: '/administrators' })
  hit(t, unsafe, 'GET', '/internals/x', { pattern: '/*', upstreamPath: '/internals/x' })
  t.same(table.match('GET', '/admin/users'), { kind: 'not_found' }, 'and in the checked table')
})

t.test('nor does a path its upstream would receive under /admin or /internal, whatever the config says', async (t) => {
  // Past the loader's checks again: the table's own check is the second line.
  const route = (method: string, path: string): UpstreamConfig['routes'][number] => ({ method, path, permission: '*' })
  const upstream = (name: string, target: string, prefix: string, routes: Array<UpstreamConfig['routes'][number]>, aliases: Record<string, string> = {}): UpstreamConfig =>
    ({ name, target, prefix, keyCase: 'snake', timeouts: { connectMs: 2000, responseMs: 10000 }, connections: 128, fairShare: 0.5, aliases, routes })
  const careless = buildRouteTable({
    upstreams: [
      upstream('stripped', 'http://127.0.0.1:4000', '/svc', [route('GET', '/*'), route('POST', '/:tenant/keys'), route('GET', '/')], { '/old': '/svc/admin' }),
      upstream('based', 'http://127.0.0.1:4000/ADMIN', '/based', [route('GET', '/*'), route('GET', '/')]),
      upstream('inner', 'http://127.0.0.1:4000/internal/', '/inner', [route('GET', '/keys')]),
      upstream('fine', 'http://127.0.0.1:4000/api', '/fine', [route('GET', '/*')])
    ]
  }, { identityOrigin: IDENTITY_ORIGIN })
  const refused: Array<[string, string]> = [
    ['GET', '/svc/admin'], ['GET', '/svc/admin/keys'], ['GET', '/svc/ADMIN/keys'], ['GET', '/svc/Internal/keys/verify'], ['HEAD', '/svc/admin/keys'],
    ['POST', '/svc/internal/keys'], ['POST', '/svc/Admin/keys'], ['GET', '/old'], ['GET', '/old/keys'],
    ['GET', '/based'], ['GET', '/based/users'], ['HEAD', '/based/users'], ['GET', '/inner/keys']
  ]
  for (const [method, path] of refused) t.same(careless.match(method, path), { kind: 'not_found' }, `${method} ${path}: not found`)
  t.same(careless.match('DELETE', '/svc/admin/keys'), { kind: 'not_found' }, 'no 405 either: an Allow header would say the path exists')
  hit(t, careless, 'GET', '/svc/administrators', { pattern: '/svc/*', upstreamPath: '/administrators' })
  hit(t, careless, 'POST', '/svc/acme/keys', { pattern: '/svc/:tenant/keys', upstreamPath: '/acme/keys' })
  hit(t, careless, 'GET', '/svc', { pattern: '/svc', upstreamPath: '/' })
  hit(t, careless, 'GET', '/fine/admin/keys', { pattern: '/fine/*', upstreamPath: '/api/admin/keys' })
})

t.test('paths from normalisePath: one spelling for the check, the match and the upstream', async (t) => {
  const matchRaw = (method: string, rawUrl: string): RouteMatch | string => {
    const normalised = normalisePath(rawUrl)
    return normalised.ok ? table.match(method, normalised.path) : normalised.reason
  }
  t.match(matchRaw('GET', '/%75sers/%34%32?x=1'), { kind: 'route', route: { pattern: '/users/:id' }, upstreamPath: '/users/42' })
  t.match(matchRaw('GET', '/%75tilisateurs/'), { kind: 'route', route: { pattern: '/users' }, upstreamPath: '/users' }, 'an encoded alias')
  t.same(matchRaw('GET', '/%61dmin/users'), { kind: 'not_found' }, 'an encoded /admin is /admin')
  t.same(matchRaw('GET', '/%49nternal/keys'), { kind: 'not_found' }, 'an encoded /Internal is /internal')
  t.equal(matchRaw('GET', '/users/%2e%2e/admin'), 'percent-encoded dot, slash, backslash or NUL')
})

t.test('counts and upstreams', async (t) => {
  t.equal(table.routeCount, 15 + 15, "the file's routes and identity's fifteen, implicit HEADs not counted")
  t.same(table.upstreams.map((u) => [u.name, u.origin, u.basePath]), [
    ['identity', IDENTITY_ORIGIN, ''],
    ['backoffice', 'http://127.0.0.1:4000', ''],
    ['billing', 'https://billing.internal:8443', '/api/v2']
  ])
  t.ok(Object.isFrozen(table.upstreams))
  t.ok(Object.isFrozen(table))
})

t.test('parameters as long as a path may be', async (t) => {
  const id = 'x'.repeat(2000)
  hit(t, table, 'GET', `/users/${id}`, { pattern: '/users/:id', upstreamPath: `/users/${id}` })
})

t.test('each table stands alone (rebuilt on reload)', async (t) => {
  const next = buildRouteTable(parseUpstreams(CONFIG_YAML.replace('path: /users,            permission: users:list', 'path: /people, permission: people:list'), 'gateway.yaml', 'yaml').config,
    { identityOrigin: IDENTITY_ORIGIN })
  t.match(next.match('GET', '/people'), { kind: 'route', route: { permission: 'people:list' } })
  t.equal(next.match('GET', '/users').kind, 'method_not_allowed', 'the new table has no GET /users')
  t.match(table.match('GET', '/users'), { kind: 'route', route: { permission: 'users:list' } }, 'the old table is unchanged')
  t.equal(table.match('GET', '/people').kind, 'not_found')
})

t.test('two routes with the same method and pattern cannot be built', async (t) => {
  const upstream = config.upstreams[0] as UpstreamConfig
  const doubled = { upstreams: [upstream, { ...upstream, name: 'again', aliases: {} }] }
  t.throws(() => buildRouteTable(doubled, { identityOrigin: IDENTITY_ORIGIN }), /already declared/)
})

t.test('1 000 routes build and match quickly', async (t) => {
  const routes = []
  for (let i = 0; i < 250; i++) {
    routes.push({ method: 'GET', path: `/r${i}`, permission: `r${i}:list` })
    routes.push({ method: 'GET', path: `/r${i}/:id`, permission: `r${i}:read` })
    routes.push({ method: 'PATCH', path: `/r${i}/:id`, permission: `r${i}:update` })
    routes.push({ method: 'GET', path: `/r${i}/:id/files/*`, permission: `r${i}:files` })
  }
  const text = JSON.stringify({ upstreams: [{ name: 'big', target: 'http://127.0.0.1:4000', routes }] })
  const started = performance.now()
  const big = buildRouteTable(parseUpstreams(text, 'big.json', 'json', { strict: true }).config, { identityOrigin: IDENTITY_ORIGIN })
  const builtMs = performance.now() - started
  t.equal(big.routeCount, 1015)
  t.ok(builtMs < 2000, `loaded, checked and built in ${Math.round(builtMs)} ms`)
  const lookups = 100_000
  const matchStart = performance.now()
  let matched = 0
  for (let n = 0; n < lookups; n++) {
    const i = n % 250
    if (big.match('GET', `/r${i}/${n}/files/a/b`).kind === 'route') matched++
  }
  const perMatchUs = ((performance.now() - matchStart) * 1000) / lookups
  t.equal(matched, lookups)
  t.ok(perMatchUs < 50, `${perMatchUs.toFixed(2)} µs per match`)
  t.match(big.match('GET', '/r249/7'), { kind: 'route', route: { permission: 'r249:read' }, upstreamPath: '/r249/7' })
  t.same(big.match('POST', '/r3/7'), { kind: 'method_not_allowed', allow: ['GET', 'HEAD', 'PATCH'] })
  t.same(big.match('GET', '/r250'), { kind: 'not_found' })
})

t.test('the console\'s routes: only with its origin, and the file keeps out of its prefix', async (t) => {
  const file = { upstreams: [] }
  const without = buildRouteTable(file, { identityOrigin: 'http://127.0.0.1:3001' })
  t.equal(without.match('GET', '/console/keys').kind, 'not_found', 'no console origin: no console routes')
  const table = buildRouteTable(file, { identityOrigin: 'http://127.0.0.1:3001', consoleOrigin: 'http://127.0.0.1:3004/ignored' })
  for (const [method, path] of [['GET', '/console'], ['GET', '/console/sign-in'], ['POST', '/console/keys'], ['HEAD', '/console/assets/console.css']] as const) {
    const found = table.match(method, path)
    t.equal(found.kind === 'route' ? `${found.route.upstream.name} ${found.route.upstream.origin} ${found.upstreamPath} ${found.route.auth}` : found.kind,
      `console http://127.0.0.1:3004 ${path} none`, `${method} ${path}: the console, path kept, no credential check`)
  }
  t.same(table.match('DELETE', '/console/keys'), { kind: 'method_not_allowed', allow: ['GET', 'HEAD', 'POST'] }, 'only GET and POST')
  const claiming = (routes: unknown[], aliases = {}): unknown => ({
    upstreams: [{ name: 'shop', target: 'http://127.0.0.1:4000', prefix: '/', keyCase: 'snake', timeouts: { connectMs: 1000, responseMs: 1000 }, connections: 8, fairShare: 1, aliases, routes }]
  })
  t.throws(() => buildRouteTable(claiming([{ method: 'GET', path: '/console/x', permission: 'a:b' }]) as never, { identityOrigin: 'http://127.0.0.1:3001', consoleOrigin: 'http://127.0.0.1:3004' }),
    { message: /routes\[0\]: GET \/console\/x is under \/console/ }, 'a file route under /console is refused while the console is served')
  t.throws(() => buildRouteTable(claiming([], { '/console': '/shop' }) as never, { identityOrigin: 'http://127.0.0.1:3001', consoleOrigin: 'http://127.0.0.1:3004' }),
    { message: /aliases: \/console is under \/console/ }, 'and so is an alias')
  t.doesNotThrow(() => buildRouteTable(claiming([{ method: 'GET', path: '/console/x', permission: 'a:b' }]) as never, { identityOrigin: 'http://127.0.0.1:3001' }),
    'without the console, the path is the file\'s')
})
