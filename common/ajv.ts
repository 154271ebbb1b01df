import { Ajv } from 'ajv'
import addFormats from 'ajv-formats'

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
  return ajv
}
