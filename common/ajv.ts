import { Ajv, type FormatDefinition } from 'ajv'
import addFormats from 'ajv-formats'

/**
 * RFC 3339's date-time, less what no JavaScript Date holds: it allows a leap second
 * (23:59:60), which Date.parse reads as NaN, and a NaN time taken from a request
 * answers 500, compares false with every bound, or reaches the database as NULL.
 */
function parseableDateTime (): FormatDefinition<string> {
  const rfc3339 = addFormats.default.get('date-time')
  if (typeof rfc3339 !== 'object' || rfc3339 instanceof RegExp || typeof rfc3339.validate !== 'function') throw new Error('ajv-formats has no date-time validator')
  // ajv-formats' full date-time is synchronous; its type is the union of every kind of format.
  const validate = rfc3339.validate as (text: string) => boolean
  return { type: 'string', validate: (text: string) => validate(text) === true && Number.isFinite(Date.parse(text)) }
}

/**
 * The one Ajv set-up every Portier validator uses (route schemas, configuration,
 * CLI options): every problem collected, defaults applied, every standard format
 * known, and extra members reported as errors rather than silently removed.
 * `coerceTypes` differs by source: never for JSON bodies (`"password": 123` is a
 * 400), yes for query strings, params and environment variables.
 */
export function createAjv (coerceTypes: boolean | 'array'): Ajv {
  const ajv = new Ajv({ coerceTypes, useDefaults: true, removeAdditional: false, allErrors: true, strict: false })
  addFormats.default(ajv)
  ajv.addFormat('date-time', parseableDateTime())
  return ajv
}
