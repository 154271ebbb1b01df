import type { Test } from 'tap'
import type { FastifyInstance } from 'fastify'
import { subscribe, unsubscribe } from 'node:diagnostics_channel'
import { Validator } from '@seriousme/openapi-schema-validator'
import { http, type HttpAnswer } from './http.js'

/** What these suites read of a document. */
export interface Document {
  openapi: string
  info: { title: string, version: string }
  paths: Record<string, Record<string, Operation>>
  components?: Record<string, Record<string, any>>
}
export type Operation = Record<string, any> & { responses: Record<string, any> }

/** A route as Fastify registered it, with its route config (e.g. the operator permission of an /admin route). */
export interface RecordedRoute { methods: string[], url: string, config: Record<string, unknown> }

const FASTIFY_INITIALIZATION = 'fastify.initialization'

/**
 * Records the routes of every Fastify instance created while `t` runs: Fastify announces
 * each new instance on the `fastify.initialization` diagnostics channel, and an onRoute
 * hook added then sees every route the app registers afterwards. These are the routes
 * an app really has, not a list kept by hand. Read them with the returned function.
 */
export function recordRoutes (t: Test): (app: FastifyInstance) => RecordedRoute[] {
  const routes = new WeakMap<object, RecordedRoute[]>()
  const onInitialization = (message: unknown): void => {
    const { fastify } = message as { fastify: FastifyInstance }
    const list: RecordedRoute[] = []
    routes.set(fastify, list)
    fastify.addHook('onRoute', (route) => {
      list.push({ methods: [route.method].flat().map(String), url: route.url ?? route.path, config: { ...route.config } })
    })
  }
  subscribe(FASTIFY_INITIALIZATION, onInitialization)
  t.teardown(() => { unsubscribe(FASTIFY_INITIALIZATION, onInitialization) })
  return (app) => routes.get(app) ?? []
}

/** `/users/:id` → `/users/{id}`, a final `*` → `{wildcard}`: how the documents name paths. */
export const documentPath = (pattern: string): string => pattern.replace(/:(\w+)/g, '{$1}').replace(/\*$/, '{wildcard}')

const isDocumentation = (url: string): boolean => url === '/openapi.json' || url === '/docs' || url.startsWith('/docs/')

/**
 * The routes missing from `document`. Left out: the documentation itself, HEAD
 * (Fastify adds one to every GET; documents list GET only), and QUERY, which OpenAPI 3.1
 * has no field for (`app.all` registers it).
 */
export function undocumentedRoutes (routes: RecordedRoute[], document: Document, skip: (url: string) => boolean = () => false): { checked: number, missing: string[] } {
  let checked = 0
  const missing: string[] = []
  for (const route of routes.filter((r) => !isDocumentation(r.url) && !skip(r.url))) {
    for (const method of route.methods.filter((m) => m !== 'HEAD' && m !== 'QUERY')) {
      checked++
      if (document.paths[documentPath(route.url)]?.[method.toLowerCase()] === undefined) missing.push(`${method} ${route.url}`)
    }
  }
  return { checked, missing }
}

/** Validates with @seriousme/openapi-schema-validator (which also resolves every $ref), printing the errors if any. */
export async function assertValidDocument (t: Test, document: unknown, label: string): Promise<Document> {
  const result = await new Validator().validate(structuredClone(document) as Record<string, unknown>)
  t.ok(result.valid, `${label}: a valid OpenAPI document`)
  if (!result.valid) t.comment(`${label}: ${JSON.stringify(result.errors, null, 2)}`)
  const valid = document as Document
  t.match(valid.openapi, /^3\.1\./, `${label}: OpenAPI 3.1`)
  return valid
}

/** GET /openapi.json over a real socket: 200 JSON, then validated. */
export async function fetchDocument (t: Test, baseUrl: string, label: string): Promise<Document> {
  const answer = await http(`${baseUrl}/openapi.json`)
  t.equal(answer.status, 200, `${label}: /openapi.json answers 200`)
  t.match(answer.headers['content-type'], /^application\/json/, `${label}: as JSON`)
  return await assertValidDocument(t, answer.body, label)
}

/** The UI: a browser asking /docs for HTML gets the page (not the JSON-only 406), and its assets load. */
export async function assertDocsUi (t: Test, baseUrl: string, label: string): Promise<void> {
  const page: HttpAnswer = await http(`${baseUrl}/docs`, { headers: { accept: 'text/html,application/xhtml+xml;q=0.9' } })
  t.equal(page.status, 200, `${label}: /docs answers a browser`)
  t.match(page.headers['content-type'], /^text\/html/, `${label}: with HTML`)
  t.match(page.text, /swagger-ui/i, `${label}: the Swagger UI page`)
  const script = await http(`${baseUrl}/docs/static/swagger-initializer.js`, { headers: { accept: '*/*' } })
  t.equal(script.status, 200, `${label}: its script loads`)
  const css = await http(`${baseUrl}/docs/static/swagger-ui.css`, { headers: { accept: 'text/css,*/*;q=0.1' } })
  t.equal(css.status, 200, `${label}: its style sheet loads`)
  const json = await http(`${baseUrl}/docs/json`)
  t.equal(json.status, 200, `${label}: the document the UI shows`)
}
