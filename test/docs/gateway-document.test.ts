import t from 'tap'
import { gatewayOpenApiDocument } from '../../gateway/docs/routes.js'
import { buildRouteTable, parseUpstreams, type RouteTable } from '../../gateway/routing/index.js'
import { assertValidDocument, type Document, type Operation } from '../helpers/openapi.js'

/**
 * The gateway's document against its route table: every operation it lists is a
 * request the gateway routes as documented (route, alias, permission), whatever the
 * config's shape: prefixes, base paths, aliases that fix a parameter or reach into a
 * wildcard, an alias of the root, parameter names that differ between methods, an
 * explicit HEAD, a route without a permission.
 */
const CONFIG = `
upstreams:
  - name: backoffice
    target: http://127.0.0.1:4000
    aliases:
      /utilisateurs: /users
      /moi: /users/me
      /v1: /
    routes:
      - { method: GET,     path: /users,         permission: users:list }
      - { method: HEAD,    path: /users,         permission: users:list }
      - { method: OPTIONS, path: /users,         permission: users:list }
      - { method: GET,     path: /users/:id,     permission: users:read }
      - { method: PATCH,   path: /users/:userId, permission: users:update }
      - { method: DELETE,  path: /users/:id,     permission: null }
  - name: billing
    target: http://127.0.0.1:4100/api
    prefix: /billing
    keyCase: camel
    aliases:
      /factures: /billing/invoices
      /f: /billing/files/x
    routes:
      - { method: GET,  path: /,             permission: billing:read }
      - { method: GET,  path: /invoices/:id, permission: invoices:read }
      - { method: POST, path: /files/*,      permission: files:write }
`

function table (): RouteTable {
  return buildRouteTable(parseUpstreams(CONFIG, 'test.yaml', 'yaml').config, { identityOrigin: 'http://127.0.0.1:3001' })
}

/** A request path the documented path stands for. */
const concrete = (path: string): string => path.replace(/\{wildcard\}$/, 'a/b').replace(/\{([^}]+)\}/g, 'x$1')
/** Paths that match the same requests look the same once parameter names are dropped. */
const shape = (path: string): string => path.replace(/\{[^}]+\}/g, '{}').replace(/:[A-Za-z_]\w*/g, '{}').replace(/\*$/, '{}')

t.test('every documented operation is routed as documented', async (t) => {
  const routes = table()
  const document = await assertValidDocument(t, await gatewayOpenApiDocument({ table: routes }), 'gateway')
  let checked = 0
  for (const [path, item] of Object.entries(document.paths)) {
    for (const [method, operation] of Object.entries(item) as Array<[string, Operation]>) {
      if (operation['x-portier-upstream'] === undefined) continue
      checked++
      const match = routes.match(method.toUpperCase(), concrete(path))
      if (match.kind !== 'route') {
        t.fail(`${method.toUpperCase()} ${path}: routed`, { match })
        continue
      }
      t.equal(match.route.upstream.name, operation['x-portier-upstream'], `${method.toUpperCase()} ${path}: to its upstream`)
      t.equal(shape(match.route.pattern), shape(operation['x-portier-alias-of'] ?? path), `${method.toUpperCase()} ${path}: by the route it names`)
      if (match.route.auth === 'required') t.equal(match.route.permission, operation['x-portier-permission'], `${method.toUpperCase()} ${path}: permission`)
    }
  }
  // 24 declared (identity's 15 included); /utilisateurs gives 6, /moi 3, /v1 24, /factures and /f one each.
  t.equal(checked, 59, 'every route and every path an alias gives it was checked')
})

t.test('every declared route is documented, aliases as the paths they give', async (t) => {
  const routes = table()
  const document = await gatewayOpenApiDocument({ table: routes }) as Document
  const operation = (method: string, path: string): Operation | undefined => document.paths[path]?.[method]
  for (const route of routes.routes) {
    const path = route.pattern.replace(/:(\w+)/g, '{$1}').replace(/\*$/, '{wildcard}').replace('{userId}', '{id}')
    t.ok(operation(route.method.toLowerCase(), path), `${route.method} ${route.pattern}`)
  }
  t.notOk(document.paths['/users/{userId}'], 'patterns that differ in parameter names share one path (OpenAPI allows no other)')
  t.match(operation('patch', '/users/{id}')?.parameters, [{ name: 'id', in: 'path' }], 'with the first declaration\'s names')
  t.ok(operation('head', '/users'), 'a declared HEAD is listed')
  t.notOk(operation('head', '/users/{id}'), 'the HEAD answered wherever GET is, not')
  t.ok(operation('get', '/moi'), 'an alias that fixes a parameter: /moi is /users/me')
  t.notOk(operation('get', '/moi')?.parameters.some((p: { in?: string }) => p.in === 'path'), 'without that parameter')
  t.match(operation('get', '/moi')?.description, /`id` is `me`/, 'and says which value it has')
  t.equal(operation('get', '/factures/{id}')?.['x-portier-alias-of'], '/billing/invoices/{id}', 'an alias under a prefix')
  t.ok(operation('post', '/f/{wildcard}'), 'an alias that reaches into a wildcard')
  for (const path of ['/v1/users', '/v1/billing', '/v1/sessions', '/v1/.well-known/jwks.json']) t.ok(document.paths[path], `an alias of / gives ${path}`)
  t.equal(operation('post', '/v1/sessions')?.summary, operation('post', '/sessions')?.summary, 'identity\'s operations through an alias stay identity\'s')
  t.match(operation('get', '/billing/invoices/{id}')?.description, /camel case/, 'the upstream\'s key case is said')

  const denied = operation('delete', '/users/{id}') as Operation
  t.equal(denied['x-portier-permission'], null, 'a route without a permission says so')
  t.same(Object.keys(denied.responses), ['400', '401', '403', '406', '503'], 'it documents its refusals only')
  t.notOk(denied.requestBody, 'and no body: it is never read')
})

t.test('one document per route table: the same table, the same document', async (t) => {
  const routes = table()
  t.same(await gatewayOpenApiDocument({ table: routes }), await gatewayOpenApiDocument({ table: routes }), 'built alike')
  const other = buildRouteTable(parseUpstreams(CONFIG.replace('/users/:id,     permission: users:read', '/users/:id,     permission: users:show'),
    'test.yaml', 'yaml').config, { identityOrigin: 'http://127.0.0.1:3001' })
  t.equal((await gatewayOpenApiDocument({ table: other })).paths['/users/{id}']?.get?.['x-portier-permission' as never], 'users:show',
    'another table, its own document')
})
