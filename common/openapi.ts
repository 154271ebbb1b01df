import swagger, { type SwaggerOptions } from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import { existsSync, readFileSync } from 'node:fs'
import { STATUS_CODES } from 'node:http'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { FastifyInstance, FastifySchema, RouteOptions } from 'fastify'
import { Type } from 'typebox'
import type { AcceptRouteConfig } from './accept.js'
import { deepFreeze } from './deep-freeze.js'
import { DOCS_PREFIX, DOCUMENT_PATH } from './documentation-paths.js'
import { createHttpApp } from './http-app.js'

/**
 * Documentation wiring shared by every Portier service: an OpenAPI 3.1 document at
 * `/openapi.json` and Swagger UI at `/docs`. Services generate the document from
 * their route schemas (@fastify/swagger); the gateway passes its own builder.
 */
export const OPENAPI_VERSION = '3.1.0'
/** The name a final `*` of a route pattern gets as an OpenAPI path parameter. */
export const WILDCARD_PARAMETER = 'wildcard'

/** Used when no package.json of Portier is found above this module (a bundled copy). */
const UNKNOWN_VERSION = '0.0.0-unknown'
const PACKAGE_NAME = 'portier'
/** What @fastify/swagger says of a response whose schema has no description. */
const SWAGGER_DEFAULT_DESCRIPTION = 'Default Response'
const STATUS_CLASSES: Record<string, string> = { 1: 'Informational', 2: 'Success', 3: 'Redirection', 4: 'Client error', 5: 'Server error' }
/** Fixed fields of an OpenAPI 3.1 Path Item. Fastify's QUERY (an operation only from 3.2 on) is left out. */
const PATH_ITEM_FIELDS = new Set(['$ref', 'summary', 'description', 'servers', 'parameters',
  'get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'])

export type JsonObject = Record<string, unknown>
export type SecurityRequirement = Record<string, string[]>

/** An OpenAPI 3.1 document, loosely typed: it is built, merged and served, never interpreted. */
export interface OpenApiDocument {
  openapi: string
  info: { title: string, version: string, description?: string }
  paths: Record<string, Record<string, unknown>>
  components?: Record<string, Record<string, unknown>>
  [member: string]: unknown
}

export interface DocumentationOptions {
  /** info.title */
  title: string
  /** info.description (CommonMark). */
  description: string
  /** Optional: without it, clients resolve paths against the URL the document came from. */
  servers?: Array<{ url: string, description?: string }>
  /** components.securitySchemes */
  securitySchemes?: Record<string, JsonObject>
  /** What every operation requires unless its route schema says otherwise (`security: []` for none). */
  security?: SecurityRequirement[]
  tags?: Array<{ name: string, description?: string }>
  /**
   * Serves this document instead of generating one from the app's routes, read on every
   * request: for an app whose operations are not its own Fastify routes (the gateway's
   * catch-all proxy). Must be cheap and must not throw.
   */
  document?: () => OpenApiDocument
}

/** Portier's version, from the package.json above this module (source or dist/), for info.version. */
export function portierVersion (): string {
  let dir = dirname(fileURLToPath(import.meta.url))
  for (;;) {
    const file = join(dir, 'package.json')
    if (existsSync(file)) {
      const pkg = JSON.parse(readFileSync(file, 'utf8')) as { name?: string, version?: string }
      if (pkg.name === PACKAGE_NAME && typeof pkg.version === 'string') return pkg.version
    }
    const parent = dirname(dir)
    if (parent === dir) return UNKNOWN_VERSION
    dir = parent
  }
}

/** A route pattern (`/users/:id`, `/echo/*`) as an OpenAPI path (`/users/{id}`, `/echo/{wildcard}`). */
export function openApiPath (pattern: string): string {
  return pattern
    .replace(/:([A-Za-z_][A-Za-z0-9_]*)/g, '{$1}')
    .replace(/\/\*$/, `/{${WILDCARD_PARAMETER}}`)
}

/** What a wildcard parameter means, wherever a document has one. */
export const WILDCARD_DESCRIPTION = 'The rest of the path: one or more characters, `/` included (send it unencoded).'

/** The document's schema of the wildcard parameter, for routes without a params schema of their own. */
function withWildcardParameter (schema: FastifySchema | undefined): FastifySchema {
  const params = (schema?.params ?? { type: 'object', properties: {} }) as { properties?: JsonObject, required?: string[] }
  const { '*': declared, ...others } = params.properties ?? {}
  return {
    ...schema,
    params: {
      ...params,
      properties: { ...others, [WILDCARD_PARAMETER]: { type: 'string', minLength: 1, ...(declared as JsonObject | undefined), description: WILDCARD_DESCRIPTION } },
      required: [...(params.required ?? []).filter((name) => name !== '*'), WILDCARD_PARAMETER]
    }
  }
}

/**
 * Path items keep the fields OpenAPI 3.1 defines (an `app.all` route also registers
 * QUERY), and a success without a description of its own is named by its status.
 */
function tidy (document: OpenApiDocument): OpenApiDocument {
  for (const [path, item] of Object.entries(document.paths)) {
    for (const field of Object.keys(item)) if (!PATH_ITEM_FIELDS.has(field) && !field.startsWith('x-')) delete item[field]
    if (Object.keys(item).length === 0) delete document.paths[path]
    for (const operation of Object.values(item) as Array<{ responses?: Record<string, { description?: string }> }>) {
      for (const [status, response] of Object.entries(operation.responses ?? {})) {
        if (response.description === SWAGGER_DEFAULT_DESCRIPTION) response.description = STATUS_CODES[status] ?? STATUS_CLASSES[status.slice(0, 1)] ?? status
      }
    }
  }
  return document
}

function baseDocument (options: DocumentationOptions): OpenApiDocument {
  return {
    openapi: OPENAPI_VERSION,
    info: { title: options.title, version: portierVersion(), description: options.description },
    ...(options.servers !== undefined ? { servers: options.servers } : {}),
    ...(options.tags !== undefined ? { tags: options.tags } : {}),
    ...(options.security !== undefined ? { security: options.security } : {}),
    components: { ...(options.securitySchemes !== undefined ? { securitySchemes: options.securitySchemes } : {}) },
    paths: {}
  }
}

function swaggerOptions (options: DocumentationOptions): SwaggerOptions {
  if (options.document !== undefined) {
    // Swagger UI needs @fastify/swagger; the document it shows comes from options.document.
    return { mode: 'static', specification: { document: baseDocument(options) as never } }
  }
  return {
    openapi: baseDocument(options) as never,
    // Shared schemas ($id, e.g. Problem) keep their name in components.schemas.
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => typeof json.$id === 'string' ? json.$id : `def-${i}` },
    transform: ({ schema, url }: { schema: FastifySchema, url: string, route: RouteOptions }) => url.endsWith('*')
      ? { schema: withWildcardParameter(schema), url: openApiPath(url) }
      : { schema, url: openApiPath(url) },
    transformObject: (({ openapiObject }: { openapiObject: OpenApiDocument }) => tidy(openapiObject)) as never
  }
}

/**
 * Serves the documentation: `GET /openapi.json` (the document, JSON like every other
 * answer) and Swagger UI under `/docs`. Register it on the app itself, before any route:
 * @fastify/swagger collects routes as they are added (onRoute). Neither appears in the
 * document. The UI answers HTML, CSS and scripts, so its routes opt out of the JSON-only
 * Accept check: a browser asking `/docs` for text/html gets the page, not a 406.
 */
export async function registerDocumentation (app: FastifyInstance, options: DocumentationOptions): Promise<void> {
  await app.register(swagger, swaggerOptions(options))
  const document = options.document ?? (() => app.swagger() as unknown as OpenApiDocument)

  // An encapsulated context, so that only the UI's routes (its assets included) get the opt-out.
  await app.register(async function documentationUi (ui) {
    const optOut: AcceptRouteConfig = { acceptsAnyMediaType: true }
    ui.addHook('onRoute', (route) => { route.config = { ...route.config, ...optOut } })
    await ui.register(swaggerUi, {
      routePrefix: DOCS_PREFIX,
      ...(options.document !== undefined ? { transformSpecification: () => document(), transformSpecificationClone: false } : {})
    })
  })

  app.get(DOCUMENT_PATH, {
    schema: { hide: true, response: { 200: Type.Object({ openapi: Type.String() }, { additionalProperties: true }) } }
  }, async (_request, reply) => {
    // The gateway's document changes with its routes: let clients revalidate.
    reply.header('cache-control', 'no-cache')
    return document()
  })
}

/**
 * A document generated from route plugins that this process does not serve (the
 * gateway republishes identity's): `register` adds them to a throwaway app that never
 * listens, so no handler runs. The result depends on code only, so it is built on the
 * first call, then every call gets the same deeply frozen object.
 */
export function generatedDocument (options: DocumentationOptions, register: (app: FastifyInstance) => Promise<void>): () => Promise<OpenApiDocument> {
  let built: Promise<OpenApiDocument> | null = null
  return async () => {
    built ??= generate(options, register).catch((err: unknown) => {
      built = null
      throw err
    })
    return await built
  }
}

async function generate (options: DocumentationOptions, register: (app: FastifyInstance) => Promise<void>): Promise<OpenApiDocument> {
  const app = createHttpApp({ name: 'openapi', logLevel: 'silent', bodyLimitBytes: 1_024 }) as unknown as FastifyInstance
  try {
    await registerDocumentation(app, options)
    await register(app)
    await app.ready()
    // Through JSON: what /openapi.json would serve, with nothing of the route schemas' objects.
    return deepFreeze(JSON.parse(JSON.stringify(app.swagger())) as OpenApiDocument)
  } finally {
    await app.close()
  }
}

/**
 * Stands for a dependency that route plugins take but must not use while registering:
 * any use fails, naming the plugin's mistake, instead of a document built wrong.
 */
export function unusedWhileRegistering<T extends object> (what: string): T {
  return new Proxy({}, {
    get (_target, member) {
      throw new Error(`route plugins must not use ${what} while registering (they read ${what}.${String(member)}): ` +
        'their documentation is generated without it')
    }
  }) as T
}
