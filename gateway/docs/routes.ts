import { readFileSync } from 'node:fs'
import type { FastifyInstance } from 'fastify'
import { ConfigError } from '../../common/config.js'
import { generatedDocument, registerDocumentation, unusedWhileRegistering, type OpenApiDocument } from '../../common/openapi.js'
import { metricsRoute } from '../observability/metrics-route.js'
import { observabilityRoutes } from '../observability/routes.js'
import type { RouteTable } from '../routing/index.js'
import type { GatewayRuntime } from '../runtime.js'
import { buildGatewayDocument, GATEWAY_DESCRIPTION, GATEWAY_TITLE, type GatewayDocumentSources } from './document.js'
// Type-only: it types the file and makes tsc copy it into dist/ beside this module. The file is read,
// not imported: the test runner's TypeScript loader drops the `with { type: 'json' }` a JSON import needs.
import type IdentityPublicDocument from './identity-public.json'

/**
 * The gateway's own routes, documented from their schemas like every other service's:
 * /metrics as the main listener serves it when metricsRoute is on (behind its token),
 * left out of the document otherwise.
 */
const gatewayOwnDocument = generatedDocument({ title: GATEWAY_TITLE, description: GATEWAY_DESCRIPTION }, async (app) => {
  await app.register(observabilityRoutes, { runtime: unusedWhileRegistering<GatewayRuntime>('runtime') })
  await app.register(metricsRoute, { metrics: unusedWhileRegistering<GatewayRuntime['metrics']>('metrics'), token: 'documentation only; never compared'.padEnd(32, '.') })
})

/**
 * Identity's public operations, from the copy of identity's document committed beside
 * this module: the gateway neither runs identity's code nor asks identity at start, so
 * it documents them whether identity is up or not, at the cost of one file read.
 * test/docs/identity-public.test.ts keeps the copy in step; `npm run docs:identity` rewrites it.
 */
let identityPublic: typeof IdentityPublicDocument | undefined
function identityPublicDocument (): typeof IdentityPublicDocument {
  identityPublic ??= JSON.parse(readFileSync(new URL('./identity-public.json', import.meta.url), 'utf8')) as typeof IdentityPublicDocument
  return identityPublic
}

async function loadSources (): Promise<GatewayDocumentSources> {
  return { identity: identityPublicDocument(), own: await gatewayOwnDocument() }
}

/**
 * The gateway's OpenAPI document for the routes in force. For a host app that runs the
 * plugin with documentationRoutes off (it has its own @fastify/swagger) and serves or
 * merges the document itself: `await gatewayOpenApiDocument(app.portierGateway)`.
 */
export async function gatewayOpenApiDocument (runtime: Pick<GatewayRuntime, 'table'> & Partial<Pick<GatewayRuntime, 'metricsRoute'>>): Promise<OpenApiDocument> {
  return buildGatewayDocument(runtime.table, await loadSources(), { metricsRoute: runtime.metricsRoute ?? false })
}

/**
 * GET /openapi.json and Swagger UI at /docs, outside the gate (no credential, like
 * /healthz). Each route table gets its document once: a reload swaps the table, so the
 * next request builds the new one (@fastify/swagger's own cache would keep the first).
 */
export async function documentationRoutes (app: FastifyInstance, { runtime }: { runtime: GatewayRuntime }): Promise<void> {
  if (app.hasDecorator('swagger')) {
    throw new ConfigError('portier gateway options', ['documentationRoutes: this app already has @fastify/swagger; ' +
      'leave documentationRoutes off and serve gatewayOpenApiDocument(app.portierGateway) from your own routes'])
  }
  let sources: GatewayDocumentSources | null = null
  // Generated once, before the first request: serving the document is then synchronous.
  app.addHook('onReady', async () => { sources = await loadSources() })
  const documents = new WeakMap<RouteTable, OpenApiDocument>()
  const current = (): OpenApiDocument => {
    const table = runtime.table
    let document = documents.get(table)
    if (document === undefined) {
      document = buildGatewayDocument(table, sources as GatewayDocumentSources, { metricsRoute: runtime.metricsRoute })
      documents.set(table, document)
    }
    return document
  }
  await registerDocumentation(app, { title: GATEWAY_TITLE, description: GATEWAY_DESCRIPTION, document: current })
}
