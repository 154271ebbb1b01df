import type { ErrorObject, ValidateFunction } from 'ajv'
import { createAjv } from '../../common/ajv.js'
import { PATTERN_MESSAGES, UpstreamsFileSchema, type UpstreamsFileContent } from './schema.js'

// Files are typed data: `connectMs: "80"` is an error, not a number (no coercion).
const validateFile: ValidateFunction = createAjv(false).compile(UpstreamsFileSchema)

const TYPE_NAMES: Readonly<Record<string, string>> = {
  string: 'a string',
  integer: 'an integer',
  number: 'a number',
  boolean: 'a boolean',
  object: 'an object (a map of members)',
  array: 'a list',
  null: 'null'
}

const unescapePointer = (segment: string): string => segment.replaceAll('~1', '/').replaceAll('~0', '~')

/** `/upstreams/0/aliases/~1x` → `upstreams[0].aliases./x`, indexes where the data holds an array. */
function describeLocation (pointer: string, data: unknown): string {
  let place = ''
  let node = data
  for (const raw of pointer.split('/').slice(1)) {
    const segment = unescapePointer(raw)
    if (Array.isArray(node)) place += `[${segment}]`
    else place += place === '' ? segment : `.${segment}`
    node = typeof node === 'object' && node !== null ? (node as Record<string, unknown>)[segment] : undefined
  }
  return place
}

/** The schema node an error's `schemaPath` leads to, minus its last step (the keyword). */
function schemaAt (schemaPath: string): Record<string, unknown> | undefined {
  let node: unknown = UpstreamsFileSchema
  for (const raw of schemaPath.replace(/^#\//, '').split('/').slice(0, -1)) {
    if (typeof node !== 'object' || node === null) return undefined
    node = (node as Record<string, unknown>)[unescapePointer(decodeURIComponent(raw))]
  }
  return typeof node === 'object' && node !== null ? node as Record<string, unknown> : undefined
}

function join (place: string, member: string): string {
  return place === '' ? member : `${place}.${member}`
}

function describeError (error: ErrorObject, data: unknown): string {
  const place = describeLocation(error.instancePath, data)
  const params = error.params as Record<string, unknown>
  switch (error.keyword) {
    case 'required':
      return `${join(place, String(params.missingProperty))}: is required`
    case 'additionalProperties': {
      const member = String(params.additionalProperty)
      const parent = schemaAt(error.schemaPath)
      const patterns = Object.keys((parent?.patternProperties ?? {}) as object)
      if (patterns.length > 0) return `${join(place, member)}: ${PATTERN_MESSAGES.get(patterns[0] ?? '') ?? 'is not a valid name here'}`
      const known = Object.keys((parent?.properties ?? {}) as object)
      return `${join(place, member)}: is not a known member (expected: ${known.join(', ')})`
    }
    case 'enum':
      return `${place}: must be one of ${(params.allowedValues as unknown[]).join(', ')}`
    case 'pattern': {
      const pattern = String(params.pattern)
      return `${place}: ${PATTERN_MESSAGES.get(pattern) ?? `must match ${pattern}`}`
    }
    case 'type': {
      const types = Array.isArray(params.type) ? params.type : [params.type]
      return `${place}: must be ${types.map((t) => TYPE_NAMES[String(t)] ?? String(t)).join(' or ')}`
    }
    case 'minItems':
      return `${place}: must not be empty`
    default:
      return `${place}: ${error.message ?? 'is invalid'}`
  }
}

export type SchemaResult = { ok: true, value: UpstreamsFileContent } | { ok: false, problems: string[] }

/**
 * Checks the parsed file against the schema and fills in defaults (in place). Each
 * problem is `<source>: <place in the file>: <what is wrong>`.
 */
export function checkSchema (data: unknown, source: string): SchemaResult {
  if (data === null || data === undefined) return { ok: false, problems: [`${source}: the file is empty: it must declare upstreams`] }
  if (validateFile(data)) return { ok: true, value: data as UpstreamsFileContent }
  const problems = (validateFile.errors ?? []).map((error) => {
    const text = describeError(error, data)
    // The document itself has no place name.
    return text.startsWith(': ') ? `${source}: the document ${text.slice(2)}` : `${source}: ${text}`
  })
  return { ok: false, problems: [...new Set(problems)] }
}
