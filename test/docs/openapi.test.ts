import t, { type Test } from 'tap'
import type { FastifyInstance } from 'fastify'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { stringify } from 'yaml'
import { loadUpstreamsFile } from '../../gateway/routing/index.js'
import { assertJson, assertProblem, PROBLEM_JSON } from '../helpers/assert.js'
import { DEFAULT_UPSTREAMS_FILE, mockUpstreams, startGateway } from '../helpers/gateway.js'
import { http, rawRequest } from '../helpers/http.js'
import { startIdentity, tempDir } from '../helpers/identity.js'
import { startUpstreamMock } from '../helpers/upstream-mock.js'
import {
  assertDocsUi, documentPath, fetchDocument, recordRoutes, undocumentedRoutes, type Document, type Operation
} from '../helpers/openapi.js'

/**
 * The four OpenAPI documents (identity public, identity admin, upstream-mock, gateway),
 * each fetched from /openapi.json over a real socket, validated as OpenAPI 3.1, and
 * checked against the routes the app really registered; the UI at /docs on each.
 */

t.test('identity: a public and an admin document, each listing every route of its listener', async (t) => {
  const routesOf = recordRoutes(t)
  const identity = await startIdentity(t)

  const publicDocument = await fetchDocument(t, identity.publicUrl, 'public')
  const publicRoutes = undocumentedRoutes(routesOf(identity.identity.publicApp), publicDocument)
  t.same(publicRoutes.missing, [], 'public: every route is documented with its method')
  t.ok(publicRoutes.checked >= 6, 'public: login, logout, refresh (twice), JWKS and /healthz were checked')
  t.same(Object.keys(publicDocument.paths).filter((p) => /^\/(admin|internal)/i.test(p)), [], 'public: no admin or internal path')
  const login = publicDocument.paths['/sessions']?.post as Operation
  t.match(login, { tags: ['sessions'], summary: String }, 'public: operations have a summary and a tag')
  t.match(login.responses, { 201: {}, 400: {}, 401: {}, 429: {} }, 'public: login lists its error answers')
  t.match(login.responses[401].description, /`invalid_credentials`.*`user_disabled`/, 'public: each names its problem codes')
  t.same(login.responses[401].content, { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } },
    'public: as problem+json, one shared schema')
  t.match(publicDocument.components?.schemas?.Problem, { required: ['type', 'title', 'status', 'detail', 'code'] }, 'public: the Problem component')
  t.same(publicDocument.paths['/tokens']?.post?.security, [{ accessToken: [] }], 'public: refresh takes the access token as Bearer')

  const adminDocument = await fetchDocument(t, identity.adminUrl, 'admin (no credential sent)')
  const adminRoutes = undocumentedRoutes(routesOf(identity.identity.adminApp), adminDocument)
  t.same(adminRoutes.missing, [], 'admin: every route is documented with its method')
  t.ok(adminRoutes.checked >= 25, 'admin: every /admin and /internal route was checked')
  t.same(Object.keys(adminDocument.components?.securitySchemes ?? {}).sort(), ['adminCredential', 'operatorToken', 'serviceCredential'],
    'admin: three bearer schemes (an operator\'s access token beside the two credentials)')
  t.same((adminDocument as unknown as { security: unknown }).security, [{ adminCredential: [] }], 'admin: the admin credential by default')
  t.same(adminDocument.paths['/internal/keys/verify']?.post?.security, [{ serviceCredential: [] }], 'admin: /internal takes the service credential')
  t.same(adminDocument.paths['/healthz']?.get?.security, [], 'admin: /healthz takes none')

  await assertDocsUi(t, identity.publicUrl, 'public')
  await assertDocsUi(t, identity.adminUrl, 'admin (no credential sent)')
  assertProblem(t, await http(`${identity.publicUrl}/openapi.json`, { headers: { accept: 'text/html' } }), 406, 'not_acceptable',
    '/openapi.json stays JSON-only')
})

t.test('security: the admin listener opens its documentation only', async (t) => {
  const identity = await startIdentity(t)
  assertProblem(t, await http(`${identity.adminUrl}/admin/users`), 401, 'admin_unauthorized', '/admin/users still needs the admin credential')
  assertJson(t, await http(`${identity.adminUrl}/admin/users`, { bearer: identity.adminToken }), 200, 'and answers with it')
  assertProblem(t, await http(`${identity.adminUrl}/internal/sessions/revoked`), 401, 'service_unauthorized', '/internal still needs the service credential')
  assertProblem(t, await http(`${identity.adminUrl}/openapi.json/x`), 401, 'admin_unauthorized', 'below /openapi.json is not open')
  assertProblem(t, await http(`${identity.adminUrl}/docsx`), 401, 'admin_unauthorized', 'a path that merely starts like /docs is not open')
  // Routing never normalises `..`: these reach the UI's routes (or none), never an admin route.
  for (const path of ['/docs/../admin/users', '/docs/%2e%2e/admin/users', '/docs/static/../../admin/users',
    '/docs/static/..%2f..%2fadmin%2fusers', '/docs/static/../../../../etc/passwd', '/docs/static/%2e%2e/%2e%2e/package.json']) {
    const answer = await rawRequest(identity.adminUrl, path)
    t.ok(answer.status === 403 || answer.status === 404, `${path}: refused (403 by the asset server, or 404)`, { status: answer.status, body: answer.text })
    t.equal(answer.headers['content-type'], PROBLEM_JSON, `${path}: as a problem, not a file or admin data`)
  }
})

t.test('upstream-mock: its document lists every route', async (t) => {
  const routesOf = recordRoutes(t)
  const mock = await startUpstreamMock(t)
  const document = await fetchDocument(t, mock.url, 'upstream-mock')
  const { checked, missing } = undocumentedRoutes(routesOf(mock.app), document)
  t.same(missing, [], 'every route is documented with its method')
  t.ok(checked >= 25, 'resources, echo (every method), edge routes and /healthz were checked')
  t.match(document.paths['/echo/{wildcard}']?.get?.parameters, [{ name: 'wildcard', in: 'path', required: true }], 'a final * is a documented parameter')
  t.same(Object.keys(document.paths['/text']?.get?.responses[200].content ?? {}), ['text/plain'], '/text is documented as text')
  await assertDocsUi(t, mock.url, 'upstream-mock')
})

interface ExpectedOperation { method: string, path: string, permission: string | null }

/** Every route and alias path of an upstreams config, as the gateway's document must list them. */
function expectedOperations (config: ReturnType<typeof loadUpstreamsFile>['config']): ExpectedOperation[] {
  const expected: ExpectedOperation[] = []
  for (const upstream of config.upstreams) {
    const routes = upstream.routes.map((r) => ({
      method: r.method,
      pattern: upstream.prefix === '/' ? r.path : `${upstream.prefix}${r.path === '/' ? '' : r.path}`,
      permission: r.permission
    }))
    for (const route of routes) expected.push({ method: route.method, path: documentPath(route.pattern), permission: route.permission })
    for (const [source, target] of Object.entries(upstream.aliases)) {
      for (const route of routes.filter((r) => r.pattern === target || r.pattern.startsWith(`${target}/`))) {
        expected.push({ method: route.method, path: documentPath(source + route.pattern.slice(target.length)), permission: route.permission })
      }
    }
  }
  return expected
}

function assertOperations (t: Test, document: Document, expected: ExpectedOperation[], label: string): void {
  for (const { method, path, permission } of expected) {
    const operation = document.paths[path]?.[method.toLowerCase()]
    t.ok(operation, `${label}: ${method} ${path} is documented`)
    if (operation === undefined) continue
    t.equal(operation['x-portier-permission'], permission, `${label}: ${method} ${path} names its permission`)
    t.same(operation.security, [{ apiKey: [] }, { accessToken: [] }], `${label}: ${method} ${path} takes an API key or a Bearer token`)
  }
}

t.test('gateway: identity\'s public operations and every route and alias of the config in force, reloads included', async (t) => {
  const identity = await startIdentity(t)
  const mock = await startUpstreamMock(t)
  const routesOf = recordRoutes(t)
  const file = join(tempDir(t), 'upstreams.yaml')
  const config = mockUpstreams(mock.url)
  writeFileSync(file, stringify(config))
  const gateway = await startGateway(t, { identity, upstreams: file })

  const document = await fetchDocument(t, gateway.url, 'gateway (no credential sent)')
  // The proxy's catch-all (`/`, `/*`) is no operation: the route table's routes are, checked below.
  const own = undocumentedRoutes(routesOf(gateway.app as unknown as FastifyInstance), document, (url) => url === '/' || url === '/*')
  t.same(own.missing, [], 'every route the gateway app registered is documented')
  t.equal(own.checked, 2, '/healthz and /readyz were checked (/metrics is on the private listener)')
  t.equal(document.paths['/metrics'], undefined, '/metrics is not listed: the main listener does not serve it')

  const shipped = loadUpstreamsFile(DEFAULT_UPSTREAMS_FILE).config
  const expected = expectedOperations(shipped)
  const declared = shipped.upstreams.reduce((n, u) => n + u.routes.length, 0)
  t.ok(declared >= 20 && expected.length > declared, 'the shipped config\'s routes, and those its /utilisateurs alias gives')
  assertOperations(t, document, expected, 'shipped config')
  t.equal(document.paths['/utilisateurs/{id}']?.get?.['x-portier-alias-of'], '/users/{id}', 'an alias says what it stands for')

  const identityDocument = (await http(`${identity.publicUrl}/openapi.json`)).body as Document
  let identityOperations = 0
  for (const [path, item] of Object.entries(identityDocument.paths).filter(([p]) => p !== '/healthz')) {
    for (const [method, operation] of Object.entries(item)) {
      identityOperations++
      const republished = document.paths[path]?.[method]
      t.equal(republished?.summary, operation.summary, `${method.toUpperCase()} ${path}: identity's operation, as identity documents it`)
      t.same(republished?.requestBody, operation.requestBody, `${method.toUpperCase()} ${path}: with identity's body schema`)
      t.same(republished?.security, operation.security, `${method.toUpperCase()} ${path}: and identity's own credential rule`)
    }
  }
  t.equal(identityOperations, 15, 'login, logout, refresh at both paths, JWKS, and the ten of self-service')
  t.same(Object.keys(document.paths).filter((p) => /^\/(admin|internal)(\/|$)/i.test(p)), [], 'nothing of /admin or /internal')
  t.match(document.paths['/echo/{wildcard}']?.get?.parameters, [{ name: 'wildcard', in: 'path', required: true }], 'a final * is a documented parameter')
  t.match(document.paths['/users']?.get?.parameters, [{ $ref: '#/components/parameters/inflection' }], 'x-api-inflection is documented')
  t.same(Object.keys(document.paths['/users']?.get?.responses ?? {}).sort(),
    ['2XX', '400', '401', '403', '404', '405', '406', '413', '415', '429', '502', '503', '504'], 'the gateway\'s error answers, the upstream\'s success')
  t.match(document.components?.responses?.TooManyRequests?.description, /`rate_limited`, `quota_exhausted`, `concurrency_limited`/,
    'any route may be refused by a key\'s or role\'s traffic policy')
  t.same(document.components?.responses?.Forbidden?.content, { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } },
    'as problem+json')
  t.same(Object.keys(document.components?.securitySchemes ?? {}).sort(), ['accessToken', 'apiKey'], 'API key or Bearer JWT')
  t.match(document.components?.securitySchemes?.apiKey, { type: 'apiKey', in: 'header', name: 'x-api-key' }, 'the key goes in x-api-key')

  await assertDocsUi(t, gateway.url, 'gateway (no credential sent)')

  const reloaded = structuredClone(config)
  reloaded.upstreams[0]?.routes.push({ method: 'GET', path: '/reports/:year', permission: 'reports:read' },
    { method: 'DELETE', path: '/users/:id', permission: null })
  writeFileSync(file, stringify(reloaded))
  t.equal(gateway.app.portierGateway.reload(), true, 'the new config is accepted')
  const after = await fetchDocument(t, gateway.url, 'after the reload')
  assertOperations(t, after, [
    { method: 'GET', path: '/reports/{year}', permission: 'reports:read' },
    { method: 'DELETE', path: '/users/{id}', permission: null },
    { method: 'DELETE', path: '/utilisateurs/{id}', permission: null }
  ], 'after the reload')
  const denied = after.paths['/users/{id}']?.delete as Operation
  t.notOk('2XX' in denied.responses, 'a route without a permission documents no success')
  t.ok('403' in denied.responses, 'only the refusal')
  t.match(denied.description, /denies it to every caller/, 'and says so')
  t.ok((await http(`${gateway.url}/docs/json`)).body.paths['/reports/{year}'], 'the UI shows the reloaded document too')
  t.notOk(document.paths['/reports/{year}'], 'the document fetched before the reload did not have it')
})
