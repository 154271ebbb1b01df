import t, { type Test } from 'tap'
import Fastify, { type FastifyInstance } from 'fastify'
import swagger from '@fastify/swagger'
import { ConfigError } from '../../common/config.js'
import { gatewayOpenApiDocument } from '../../gateway/docs/routes.js'
import { portierGateway, type GatewayPluginOptions } from '../../gateway/plugin.js'
import { assertProblem } from '../helpers/assert.js'
import { mockUpstreams, startGateway } from '../helpers/gateway.js'
import { http } from '../helpers/http.js'
import { startIdentity } from '../helpers/identity.js'
import { assertValidDocument } from '../helpers/openapi.js'

/**
 * documentationRoutes: off in the plugin (a host app may have its own @fastify/swagger),
 * on in the standalone server; the document is available to a host either way.
 */
const OPTIONS: GatewayPluginOptions = {
  upstreams: { upstreams: [{ name: 'mock', target: 'http://127.0.0.1:1', routes: [{ method: 'GET', path: '/users', permission: 'users:list' }] }] },
  identity: { publicUrl: 'http://127.0.0.1:1', internalUrl: 'http://127.0.0.1:2', serviceToken: 'x'.repeat(32), timeoutMs: 100 }
}

async function host (t: Test, build: (app: FastifyInstance) => Promise<void>): Promise<FastifyInstance> {
  const app = Fastify({ logger: false })
  t.teardown(() => app.close())
  await build(app)
  await app.ready()
  return app
}

t.test('in a host app, off by default: the host keeps /openapi.json and /docs, and its own @fastify/swagger', async (t) => {
  const app = await host(t, async (app) => {
    await app.register(swagger, { openapi: { openapi: '3.1.0', info: { title: 'host', version: '1' } } })
    app.get('/host/hello', { schema: { summary: 'The host\'s own route' } }, async () => ({ hello: 'host' }))
    await app.register(portierGateway, OPTIONS)
  })
  const gate = await app.inject({ url: '/openapi.json' })
  t.equal(gate.statusCode, 404, 'the gateway serves no /openapi.json: it is just an unrouted path')
  t.equal(gate.json().code, 'not_found', 'answered by the gateway\'s gate')
  const hostDocument = app.swagger() as unknown as { paths: Record<string, unknown> }
  t.ok(hostDocument.paths['/host/hello'], 'the host\'s document has the host\'s routes')
  t.notOk(hostDocument.paths['/'], 'not the gateway\'s catch-all')
  t.notOk(hostDocument.paths['/{*}'], 'in any form')

  const document = await assertValidDocument(t, await gatewayOpenApiDocument(app.portierGateway), 'for the host to serve')
  t.ok(document.paths['/users']?.get, 'the gateway\'s document, for the host to serve or merge')
})

t.test('in a host app, on: /openapi.json and /docs outside the gate', async (t) => {
  const app = await host(t, async (app) => { await app.register(portierGateway, { ...OPTIONS, documentationRoutes: true }) })
  const answer = await app.inject({ url: '/openapi.json' })
  t.equal(answer.statusCode, 200, 'no credential needed')
  const document = await assertValidDocument(t, answer.json(), 'plugin')
  t.ok(document.paths['/users']?.get, 'the upstream route')
  t.ok(document.paths['/sessions']?.post, 'identity\'s')
  const page = await app.inject({ url: '/docs', headers: { accept: 'text/html' } })
  t.equal(page.statusCode, 200, 'the UI')
  t.match(page.headers['content-type'], /^text\/html/, 'as HTML')
})

t.test('on, beside a host\'s own @fastify/swagger: refused at registration, saying what to do', async (t) => {
  const app = Fastify({ logger: false })
  t.teardown(() => app.close())
  await app.register(swagger, { openapi: { openapi: '3.1.0', info: { title: 'host', version: '1' } } })
  const err = await app.register(portierGateway, { ...OPTIONS, documentationRoutes: true }).ready().then(() => null, (e: unknown) => e)
  t.ok(err instanceof ConfigError, 'a ConfigError')
  t.match((err as Error).message, /documentationRoutes: .*gatewayOpenApiDocument/, 'naming the option and the way out')
})

t.test('the option is validated like the others', async (t) => {
  const app = Fastify({ logger: false })
  t.teardown(() => app.close())
  const err = await app.register(portierGateway, { ...OPTIONS, documentationRoutes: 'yes' as never }).ready().then(() => null, (e: unknown) => e)
  t.ok(err instanceof ConfigError, 'a ConfigError')
  t.match((err as Error).message, /documentationRoutes/, 'naming the option')
})

t.test('the standalone server serves them unless its config turns them off', async (t) => {
  const identity = await startIdentity(t)
  const on = await startGateway(t, { identity, upstreams: mockUpstreams('http://127.0.0.1:1') })
  t.equal((await http(`${on.url}/openapi.json`)).status, 200, 'on by default')
  const off = await startGateway(t, { identity, upstreams: mockUpstreams('http://127.0.0.1:1'), options: { documentationRoutes: false } })
  assertProblem(t, await http(`${off.url}/openapi.json`), 404, 'not_found', 'off: an unrouted path')
  assertProblem(t, await http(`${off.url}/docs`), 404, 'not_found', 'off: no UI')
})
