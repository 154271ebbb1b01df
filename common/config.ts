import type { ErrorObject } from 'ajv'
import { createAjv } from './ajv.js'
import { deepFreeze } from './deep-freeze.js'
import { Type, type TObject } from 'typebox'

/** Thrown at start when configuration is invalid; lists every problem at once. */
export class ConfigError extends Error {
  readonly problems: string[]
  constructor (source: string, problems: string[]) {
    super(`Invalid configuration (${source}):\n${problems.map((p) => `  - ${p}`).join('\n')}`)
    this.name = 'ConfigError'
    this.problems = problems
  }
}

function describe (error: ErrorObject, root: string): string {
  const params = error.params as Record<string, unknown>
  if (error.keyword === 'required') return `${root}${String(params.missingProperty)}: is required`
  const field = error.instancePath.replace(/^\//, '').replaceAll('/', '.')
  const where = `${root}${field}`
  if (error.keyword === 'additionalProperties') return `${where}${field === '' ? '' : '.'}${String(params.additionalProperty)}: is not a known option`
  if (error.keyword === 'enum') return `${where}: must be one of ${(params.allowedValues as unknown[]).join(', ')}`
  return `${where}: ${error.message ?? 'is invalid'}`
}

/**
 * Validates raw values (environment variables, plugin options) against a schema:
 * defaults applied, strings coerced to the declared types, every problem reported
 * with the name of the field. Returns a copy, deep-frozen: nested options too.
 */
export function validateConfig<T> (schema: TObject, raw: Record<string, unknown>, source: string, root = ''): Readonly<T> {
  const validate = createAjv(true).compile(schema)
  const candidate: Record<string, unknown> = {}
  for (const key of Object.keys(schema.properties)) {
    const value = raw[key]
    // An empty environment variable means "not set", as in most process managers.
    if (value !== undefined && value !== '') candidate[key] = value
  }
  if (!validate(candidate)) {
    throw new ConfigError(source, (validate.errors ?? []).map((e) => describe(e, root)))
  }
  return deepFreeze(candidate) as Readonly<T>
}

/** LOG_LEVEL, as every service reads it: pino's levels. */
export const LOG_LEVEL_PROPERTY = Type.Enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const, { default: 'info', description: 'pino log level.' })

/** LOG_FORMAT, as every service reads it: JSON lines for machines, or lines for a person at a terminal. */
export const LOG_FORMAT_PROPERTY = Type.Enum(['json', 'pretty'] as const, {
  default: 'json',
  description: '`json`: one JSON object per line (what log collectors read). `pretty`: human-readable lines (pino-pretty), an access line as one sentence; what `npm start` uses unless told otherwise.'
})

/** A *_TRUST_PROXY value as Fastify's trustProxy takes it: false, true, or the list of addresses as given. */
export function parseTrustProxy (value: string): boolean | string {
  if (value === 'false') return false
  if (value === 'true') return true
  return value
}
