import { CommonProblems } from '../common/problem.js'
import { GatewayDetails, GatewayProblems } from './errors.js'

/**
 * Method overrides: ways an upstream framework may be told to treat a request as
 * another method (Laravel and Symfony read `_method` from the query or the body,
 * Express's method-override the query, ASP.NET an `X-HTTP-Method-Override` form or
 * query field, Salesforce `_HttpMethod`). The gateway authorises the real method only,
 * so it refuses every one of them instead of forwarding it.
 */

/** Request headers that override the method (any letter case: Node lower-cases names). */
export const METHOD_OVERRIDE_HEADERS = ['x-http-method-override', 'x-http-method', 'x-method-override'] as const

/** Override parameter names, folded as `foldName` folds them. */
const OVERRIDE_NAMES = new Set(['_method', '_httpmethod', 'x_http_method_override', 'x_http_method', 'x_method_override'])

/** Every override name holds "method"; a percent-escape or a JSON `\u` escape could spell it. */
const QUERY_PREFILTER = /method|%/i
const BODY_PREFILTER = /method|\\u/i

/** Lower case, with the characters PHP turns into `_` in parameter names (space, `.`, `[`) and `-` folded to `_`. */
function foldName (name: string): string {
  return name.toLowerCase().replace(/[ .[-]/g, '_')
}

/**
 * Whether a parameter name, once decoded, is read as an override by some framework.
 * PHP ends names at NUL, drops leading spaces, reads `_method[]` and `_method[x]` as
 * `_method` (an array) and turns an unmatched `[`, `.` and space into `_` (`.method`,
 * ` method` are `_method`); matching is case-insensitive to cover case-folding readers.
 */
function namesOverride (name: string): boolean {
  const cut = name.split('\0', 1)[0] ?? ''
  for (const base of [cut, cut.trimStart()]) {
    if (OVERRIDE_NAMES.has(foldName(base))) return true
    const bracket = base.indexOf('[')
    if (bracket !== -1 && OVERRIDE_NAMES.has(foldName(base.slice(0, bracket)))) return true
  }
  return false
}

/**
 * A query parameter name as a form decoder reads it: `+` is a space and escapes are
 * decoded, again while any remain (for upstreams that decode twice: `%255Fmethod`).
 * Each escape is one character: names worth refusing are ASCII.
 */
function decodeQueryName (raw: string): string {
  let name = raw.replaceAll('+', ' ')
  for (let round = 0; round < 3 && name.includes('%'); round++) {
    const decoded = name.replace(/%([0-9a-f]{2})/gi, (_, hex: string) => String.fromCharCode(Number.parseInt(hex, 16)))
    if (decoded === name) break
    name = decoded
  }
  return name
}

/**
 * Whether the query string (with its `?`) names a method override in any spelling
 * frameworks fold to one: `_method`, `%5Fmethod`, `.method`, `+method`, `_METHOD`,
 * `_method[]`, `X-HTTP-Method-Override`. Pairs are split on `&` and on `;`, which
 * some parsers (Rack before 3) also treat as a separator.
 */
export function queryOverridesMethod (search: string): boolean {
  if (search.length <= 1 || !QUERY_PREFILTER.test(search)) return false
  for (const pair of search.slice(1).split(/[&;]/)) {
    const equals = pair.indexOf('=')
    const name = equals === -1 ? pair : pair.slice(0, equals)
    if (QUERY_PREFILTER.test(name) && namesOverride(decodeQueryName(name))) return true
  }
  return false
}

export type BodyOverride = 'none' | 'override' | 'unreadable'

/**
 * Whether a JSON request body (as the upstream will receive it) has a top-level member
 * that overrides the method (Laravel reads `_method` from JSON bodies). Most bodies are
 * never parsed here: only those that mention "method" or hold a `\u` escape.
 * `unreadable`: the body mentions one but is not JSON the gateway can read, so what
 * the upstream's parser would make of it cannot be known.
 */
export function bodyOverridesMethod (body: string): BodyOverride {
  if (!BODY_PREFILTER.test(body)) return 'none'
  let parsed: unknown
  try {
    parsed = JSON.parse(body)
  } catch {
    return 'unreadable'
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return 'none'
  for (const name of Object.keys(parsed)) if (namesOverride(name)) return 'override'
  return 'none'
}

/** Throws the problem for an override header, or a query string (with its `?`) naming an override. */
export function refuseHeaderOrQueryOverride (headers: Readonly<Record<string, unknown>>, search: string): void {
  for (const header of METHOD_OVERRIDE_HEADERS) {
    if (headers[header] !== undefined) throw GatewayProblems.methodOverrideRefused([GatewayDetails.overrideHeader(header)])
  }
  if (queryOverridesMethod(search)) throw GatewayProblems.methodOverrideRefused([GatewayDetails.overrideQuery])
}

/** Throws the problem for a JSON body (as the upstream will receive it) that overrides the method. */
export function refuseBodyMethodOverride (body: Buffer | string): void {
  const found = bodyOverridesMethod(typeof body === 'string' ? body : body.toString('utf8'))
  if (found === 'override') throw GatewayProblems.methodOverrideRefused([GatewayDetails.overrideBody])
  if (found === 'unreadable') throw CommonProblems.malformedJson()
}
