import { STATUS_CODES } from 'node:http'
import {
  OPENAPI_VERSION, openApiPath, portierVersion, WILDCARD_DESCRIPTION, WILDCARD_PARAMETER, type JsonObject, type OpenApiDocument
} from '../../common/openapi.js'
import { AuthProblems, CommonProblems, type ProblemFactory } from '../../common/problem.js'
import { PROBLEM_MEDIA_TYPE, PROBLEM_SCHEMA_ID } from '../../common/problem-schema.js'
import { GatewayProblems } from '../errors.js'
import { ALLOWED_INFLECTION_VALUES } from '../inflection/index.js'
import { CONSOLE_UPSTREAM_NAME, pathSegments, patternCanStartWith, patternKey } from '../routing/paths.js'
import type { ResolvedRoute, RouteTable } from '../routing/index.js'

/**
 * The gateway's OpenAPI document: the public contract behind its one base URL. Built
 * from the route table in force (so it follows reloads) and from two generated
 * documents: identity's public one (its committed copy) and the gateway's own routes
 * (health, readiness, and metrics when the main listener serves them). Nothing here is
 * written by hand but the words around the generated parts.
 */
export interface GatewayDocumentSources {
  /** Identity's public document (its committed copy, identity-public.json): the operations identity serves through the gateway. */
  identity: Pick<OpenApiDocument, 'paths' | 'components'>
  /** The gateway's own routes, generated from their schemas. */
  own: OpenApiDocument
}

export const GATEWAY_TITLE = 'Portier gateway — public API'
export const GATEWAY_DESCRIPTION = [
  'Every route of the back-office services behind this gateway, and identity\'s login, refresh and logout, at one base URL.',
  '',
  '- **Credentials**: `x-api-key: <key>` or `Authorization: Bearer <access_token>` (from `POST /sessions`), never both.',
  '  Each upstream route needs one permission (`resource:action`, see `x-portier-permission`); a credential without it gets 403.',
  '- **Answers** of upstream routes are the upstream\'s own: status, headers and body pass through, errors included.',
  '  The gateway\'s own errors are RFC 9457 `application/problem+json` with a stable `code`.',
  '- **Key case**: `x-api-inflection: camel | dash | kebab | snake | pascal` converts the keys of JSON bodies both ways.',
  '- **Accept**: missing, `*/*` or JSON; anything that excludes JSON gets 406. Request bodies are JSON (415 otherwise).',
  '- **HEAD** is answered wherever GET is; it is not listed separately.',
  '- This document follows the gateway\'s upstreams config: after a reload it lists the routes then in force.'
].join('\n')

const IDENTITY_TAG = 'identity'
const OWN_TAG = 'gateway'
const INFLECTION_PARAMETER = 'inflection'
const SECURITY = [{ apiKey: [] }, { accessToken: [] }]
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH'])

/** What the gateway itself answers, status by status; the codes come from the problem tables. */
const GATEWAY_PROBLEMS: readonly ProblemFactory[] = [
  GatewayProblems.malformedPath, CommonProblems.malformedUrl, GatewayProblems.methodOverrideRefused, GatewayProblems.invalidInflection,
  GatewayProblems.conflictingCredentials, CommonProblems.malformedJson, GatewayProblems.bodyTooDeep,
  AuthProblems.credentialsMissing, AuthProblems.invalidToken, GatewayProblems.invalidApiKey,
  GatewayProblems.permissionDenied, GatewayProblems.permissionNotDeclared,
  CommonProblems.notFound, GatewayProblems.methodNotAllowed, CommonProblems.notAcceptable,
  CommonProblems.bodyTooLarge, CommonProblems.unsupportedMediaType,
  GatewayProblems.upstreamUnavailable, GatewayProblems.upstreamBodyNotInflectable, GatewayProblems.identityUnavailable,
  GatewayProblems.upstreamTimeout,
  // Any route: a key's or a role's policies apply wherever the credential goes.
  GatewayProblems.rateLimited, GatewayProblems.quotaExhausted, GatewayProblems.concurrencyLimited, GatewayProblems.trafficControlUnavailable
]
/** Before the body is read: all a route declared without a permission can answer. */
const DENIED_ROUTE_STATUSES = [400, 401, 403, 406, 503]
/** What the gateway may answer in front of identity's own answers: it checks no credential there. */
const IDENTITY_ROUTE_PROBLEMS: readonly ProblemFactory[] = [
  GatewayProblems.malformedPath, CommonProblems.malformedUrl, GatewayProblems.methodOverrideRefused, GatewayProblems.invalidInflection,
  CommonProblems.malformedJson, GatewayProblems.bodyTooDeep, CommonProblems.notAcceptable, CommonProblems.bodyTooLarge,
  CommonProblems.unsupportedMediaType, GatewayProblems.upstreamUnavailable, GatewayProblems.upstreamBodyNotInflectable,
  GatewayProblems.upstreamTimeout, GatewayProblems.rateLimited, GatewayProblems.trafficControlUnavailable
]

function codesByStatus (problems: readonly ProblemFactory[]): Map<number, string[]> {
  const byStatus = new Map<number, string[]>()
  for (const problem of problems) byStatus.set(problem.status, [...byStatus.get(problem.status) ?? [], problem.code])
  return new Map([...byStatus].sort(([a], [b]) => a - b))
}

const problemContent = { [PROBLEM_MEDIA_TYPE]: { schema: { $ref: `#/components/schemas/${PROBLEM_SCHEMA_ID}` } } }

const responseName = (status: number): string => (STATUS_CODES[status] ?? `Status${status}`).replace(/[^A-Za-z]/g, '')
const responseRef = (status: number): JsonObject => ({ $ref: `#/components/responses/${responseName(status)}` })
const codeList = (codes: readonly string[]): string => codes.map((code) => `\`${code}\``).join(', ')

const METRICS_PATH = '/metrics'
/**
 * The metrics token's security scheme. Added here rather than in the route's schema: a
 * host app's own @fastify/swagger would otherwise need the scheme declared to list the route.
 */
const METRICS_SECURITY_SCHEME = 'metricsToken'

export interface GatewayDocumentOptions {
  /** /metrics is served on the main listener (behind its token): list it. Default false. */
  metricsRoute?: boolean
}

function components (sources: GatewayDocumentSources, byStatus: Map<number, string[]>, metricsRoute: boolean): Record<string, Record<string, unknown>> {
  const responses: Record<string, unknown> = {}
  for (const [status, codes] of byStatus) {
    responses[responseName(status)] = { description: `${STATUS_CODES[status] ?? 'Error'} (gateway): ${codeList(codes)}`, content: problemContent }
  }
  return {
    schemas: { ...sources.own.components?.schemas, ...sources.identity.components?.schemas },
    responses,
    parameters: {
      [INFLECTION_PARAMETER]: {
        name: 'x-api-inflection',
        in: 'header',
        required: false,
        description: 'Key case of the JSON bodies, both ways: the answer\'s keys are converted to it, the request body\'s to the ' +
          'upstream\'s own case. Matched without regard to letter case; `kebab` is `dash`. Another value: 400 `invalid_inflection`.',
        schema: { type: 'string', enum: [...ALLOWED_INFLECTION_VALUES] }
      }
    },
    securitySchemes: {
      apiKey: { type: 'apiKey', in: 'header', name: 'x-api-key', description: 'An API key issued by identity.' },
      accessToken: {
        type: 'http',
        scheme: 'bearer',
        bearerFormat: 'JWT',
        description: 'An access token from `POST /sessions` or `POST /tokens` (JWT, verified by the gateway with identity\'s keys).'
      },
      ...(metricsRoute
        ? { [METRICS_SECURITY_SCHEME]: { type: 'http', scheme: 'bearer', description: 'The metrics token (GATEWAY_METRICS_TOKEN): for GET /metrics only.' } }
        : {})
    }
  }
}

/**
 * OpenAPI paths of the table's patterns. Patterns that differ only in parameter names
 * match the same requests, and OpenAPI wants one path for them: the first one's names.
 */
function createPathNamer () {
  const byKey = new Map<string, string>()
  return (pattern: string): string => {
    const key = patternKey(pattern)
    const known = byKey.get(key)
    if (known !== undefined) return known
    const path = openApiPath(pattern)
    byKey.set(key, path)
    return path
  }
}

function pathParameters (path: string): JsonObject[] {
  return [...path.matchAll(/\{([^}]+)\}/g)].map(([, name]) => name === WILDCARD_PARAMETER && path.endsWith(`{${name}}`)
    ? { name, in: 'path', required: true, description: `${WILDCARD_DESCRIPTION} An encoded \`/\` (%2F) is refused: 400 \`malformed_path\`.`, schema: { type: 'string', minLength: 1 } }
    : { name, in: 'path', required: true, schema: { type: 'string', minLength: 1 } })
}

/** How an alias leads to a route: its source stands for the target, by whole segments. */
interface AliasUse { source: string, target: string, fixed: string[] }

/**
 * The pattern an alias gives a route, or undefined if the alias does not lead there:
 * `/utilisateurs` → `/users` gives `/users/:id` the pattern `/utilisateurs/:id`; a
 * parameter the target fixes (`/users/7`) disappears from it.
 */
function aliasPattern (pattern: string, source: string, target: string): { pattern: string, fixed: string[] } | undefined {
  if (!patternCanStartWith(pattern, target)) return undefined
  const segments = pathSegments(pattern)
  const consumed = pathSegments(target)
  const fixed: string[] = []
  for (let i = 0; i < consumed.length; i++) {
    const segment = segments[i] as string
    // The target reaches into the wildcard: what follows the source is the wildcard's end.
    if (segment === '*') return { pattern: `${source}/*`, fixed }
    if (segment.startsWith(':')) fixed.push(`\`${segment.slice(1)}\` is \`${consumed[i] as string}\``)
  }
  const rest = segments.slice(consumed.length)
  return { pattern: rest.length === 0 ? source : `${source}/${rest.join('/')}`, fixed }
}

function operationId (upstream: string, method: string, path: string, taken: Set<string>): string {
  const base = `${upstream}_${method.toLowerCase()}_${path.replace(/[^A-Za-z0-9]+/g, '_').replace(/^_|_$/g, '')}`.replace(/_$/, '')
  let id = base
  for (let n = 2; taken.has(id); n++) id = `${base}_${n}`
  taken.add(id)
  return id
}

function aliasNote (alias: AliasUse | undefined, canonicalPath: string, method: string): string {
  if (alias === undefined) return ''
  const fixed = alias.fixed.length > 0 ? ` (${alias.fixed.join(', ')})` : ''
  return `\n\nAlias of \`${method} ${canonicalPath}\`: \`${alias.source}\` stands for \`${alias.target}\`${fixed}.`
}

/** The route's own and its upstream's traffic policies, and its cost, as a client reads them. */
function trafficNote (route: ResolvedRoute): string {
  const { policies, cost } = route.traffic
  if (policies.length === 0 && cost === 1) return ''
  const named = policies.map(({ policy }) => `\`${policy.name}\` (${policy.kind}, ${policy.limit}${policy.kind === 'rate' ? ` per ${policy.window_seconds} s` : policy.kind === 'quota' ? ` per ${policy.period}` : ' in flight'}, per ${policy.partition})`)
  return `\n\nTraffic policies: ${named.length > 0 ? named.join(', ') : 'none of its own'}${cost === 1 ? '' : `; each request costs ${cost} units`}. ` +
    'Limited answers carry `RateLimit-Policy` and `RateLimit`; a refusal is 429 with `Retry-After`.'
}

/** `x-portier-alias-of`: the path an alias operation stands for, as documented. */
const aliasOf = (alias: AliasUse | undefined, canonicalPath: string): JsonObject => alias === undefined ? {} : { 'x-portier-alias-of': canonicalPath }

function upstreamOperation (route: ResolvedRoute, path: string, canonicalPath: string, alias: AliasUse | undefined, byStatus: Map<number, string[]>): JsonObject {
  const { upstream, permission, method } = route
  const denied = permission === null
  const statuses = denied ? DENIED_ROUTE_STATUSES : [...byStatus.keys()]
  const responses: JsonObject = {}
  if (!denied) {
    responses['2XX'] = {
      description: 'The upstream\'s answer, passed through: its status, headers and body (JSON keys converted when `x-api-inflection` asks).',
      content: { 'application/json': { schema: {} } }
    }
  }
  for (const status of statuses) responses[String(status)] = responseRef(status)
  const summary = denied ? 'Declared without a permission: always 403' : `Needs ${permission}`
  const rule = denied
    ? 'No permission is declared for this route, so the gateway denies it to every caller: 403 `permission_not_declared` ' +
      '(after authentication: 401 without a valid credential). It never reaches the upstream.'
    : `Requires the permission \`${permission}\` (a credential without it: 403 \`permission_denied\`, naming it).`
  return {
    tags: [upstream.name],
    summary,
    description: `Proxied to the upstream \`${upstream.name}\` (JSON keys in ${upstream.keyCase} case there).\n\n${rule}` +
      trafficNote(route) + aliasNote(alias, canonicalPath, method),
    parameters: [...pathParameters(path), { $ref: `#/components/parameters/${INFLECTION_PARAMETER}` }],
    ...(BODY_METHODS.has(method) && !denied
      ? {
          requestBody: {
            required: false,
            description: 'JSON, passed on to the upstream (in its key case when `x-api-inflection` is sent). Another media type: 415.',
            content: { 'application/json': { schema: {} } }
          }
        }
      : {}),
    security: SECURITY,
    'x-portier-upstream': upstream.name,
    'x-portier-permission': permission,
    ...aliasOf(alias, canonicalPath),
    responses
  }
}

/** Identity's operation as identity documents it, plus what passing through the gateway adds. */
function identityOperation (generated: JsonObject | undefined, path: string, canonicalPath: string, method: string,
  alias: AliasUse | undefined): JsonObject {
  const operation = structuredClone(generated ?? { responses: {} }) as JsonObject & { responses: JsonObject, parameters?: JsonObject[], description?: string }
  for (const [status, codes] of codesByStatus(IDENTITY_ROUTE_PROBLEMS)) {
    const own = operation.responses[String(status)] as { description: string } | undefined
    if (own === undefined) {
      operation.responses[String(status)] = { description: `${STATUS_CODES[status] ?? 'Error'} (gateway): ${codeList(codes)}`, content: problemContent }
      continue
    }
    const added = codes.filter((code) => !own.description.includes(`\`${code}\``))
    if (added.length > 0) own.description = `${own.description}; from the gateway: ${codeList(added)}`
  }
  operation.responses = Object.fromEntries(Object.entries(operation.responses).sort(([a], [b]) => a.localeCompare(b)))
  const parameters = (operation.parameters ?? []).filter((p) => p.in !== 'path')
  return {
    ...operation,
    tags: [IDENTITY_TAG],
    description: `${operation.description ?? ''}${operation.description === undefined ? '' : '\n\n'}Served by identity; ` +
      'the gateway forwards it without checking a credential itself.' + aliasNote(alias, canonicalPath, method),
    parameters: [...pathParameters(path), ...parameters, { $ref: `#/components/parameters/${INFLECTION_PARAMETER}` }],
    'x-portier-upstream': IDENTITY_TAG,
    ...aliasOf(alias, canonicalPath)
  }
}

/**
 * The document for `table`: identity's public operations, every route of the upstreams
 * config and every path an alias gives it, and the gateway's own routes. Implicit HEADs
 * are left out (see the description). Never throws for a table the loader accepted.
 */
export function buildGatewayDocument (table: RouteTable, sources: GatewayDocumentSources, options: GatewayDocumentOptions = {}): OpenApiDocument {
  const metricsRoute = options.metricsRoute ?? false
  const byStatus = codesByStatus(GATEWAY_PROBLEMS)
  const namePath = createPathNamer()
  const paths: Record<string, Record<string, unknown>> = {}
  const operationIds = new Set<string>()
  const add = (path: string, method: string, operation: JsonObject, upstream: string): void => {
    paths[path] ??= {}
    const item = paths[path] as Record<string, unknown>
    item[method.toLowerCase()] = { operationId: operationId(upstream, method, path, operationIds), ...operation }
  }

  // The console's pages are HTML for browsers, not part of the API.
  const apiRoutes = table.routes.filter((route) => route.upstream.name !== CONSOLE_UPSTREAM_NAME)
  for (const route of apiRoutes) namePath(route.pattern)
  const uses: Array<{ route: ResolvedRoute, pattern: string, alias?: AliasUse }> = apiRoutes.map((route) => ({ route, pattern: route.pattern }))
  for (const [source, target] of table.aliases) {
    for (const route of apiRoutes) {
      const aliased = aliasPattern(route.pattern, source, target)
      if (aliased !== undefined) uses.push({ route, pattern: aliased.pattern, alias: { source, target, fixed: aliased.fixed } })
    }
  }

  for (const { route, pattern, alias } of uses) {
    const path = namePath(pattern)
    const canonicalPath = namePath(route.pattern)
    if (route.auth === 'none') {
      const generated = sources.identity.paths[openApiPath(route.pattern)]?.[route.method.toLowerCase()] as JsonObject | undefined
      add(path, route.method, identityOperation(generated, path, canonicalPath, route.method, alias), IDENTITY_TAG)
    } else {
      add(path, route.method, upstreamOperation(route, path, canonicalPath, alias, byStatus), route.upstream.name)
    }
  }
  for (const [path, item] of Object.entries(sources.own.paths)) {
    if (path === METRICS_PATH && !metricsRoute) continue
    const security = path === METRICS_PATH ? { security: [{ [METRICS_SECURITY_SCHEME]: [] }] } : {}
    for (const [method, operation] of Object.entries(item)) add(path, method, { ...(operation as JsonObject), ...security, tags: [OWN_TAG] }, OWN_TAG)
  }

  const upstreamTags = table.upstreams.slice(1).filter((u) => u.name !== CONSOLE_UPSTREAM_NAME).map((u) => ({ name: u.name, description: `Routes of the upstream ${u.name}.` }))
  const tags = [
    { name: IDENTITY_TAG, description: 'Log in, refresh, log out and the keys that verify access tokens: served by identity.' },
    ...upstreamTags,
    { name: OWN_TAG, description: metricsRoute ? 'The gateway\'s own health and readiness (no credential), and metrics (the metrics token).' : 'The gateway\'s own health and readiness (no credential).' }
  ].filter((tag, i, all) => all.findIndex((t) => t.name === tag.name) === i)

  return {
    openapi: OPENAPI_VERSION,
    info: { title: GATEWAY_TITLE, version: portierVersion(), description: GATEWAY_DESCRIPTION },
    tags,
    paths,
    components: components(sources, byStatus, metricsRoute)
  }
}
