/** The key cases a client may ask for and an upstream may declare as its native case. */
export type KeyCase = 'camel' | 'dash' | 'snake' | 'pascal'

export const KEY_CASES: readonly KeyCase[] = Object.freeze(['camel', 'dash', 'snake', 'pascal'])

/** Every value `x-api-inflection` accepts (case-insensitive), for the 400 answer. */
export const ALLOWED_INFLECTION_VALUES: readonly string[] = Object.freeze(['camel', 'dash', 'kebab', 'snake', 'pascal'])

export type InflectionRequest =
  | { kind: 'none' }
  | { kind: 'style', style: KeyCase }
  | { kind: 'invalid' }

const HEADER_VALUES: ReadonlyMap<string, KeyCase> = new Map([
  ['camel', 'camel'],
  ['dash', 'dash'],
  ['kebab', 'dash'],
  ['snake', 'snake'],
  ['pascal', 'pascal']
])

const NONE: InflectionRequest = Object.freeze({ kind: 'none' })
const INVALID: InflectionRequest = Object.freeze({ kind: 'invalid' })

/**
 * Reads `x-api-inflection` as Node hands it over. Absent: `none`. One of
 * ALLOWED_INFLECTION_VALUES after trimming, in any letter case: that style (`kebab` is
 * `dash`). Anything else is `invalid`, including an empty value (a header that is
 * present says the client wanted something) and an array: Node only yields arrays for
 * repeated headers, and two instructions for one body are a client bug, not a choice
 * to guess at. (Node joins repeated unknown headers into `"camel, camel"`, which is
 * invalid for the same reason.)
 */
export function parseInflectionHeader (value: string | string[] | undefined): InflectionRequest {
  if (value === undefined) return NONE
  if (typeof value !== 'string') return INVALID
  const style = HEADER_VALUES.get(value.trim().toLowerCase())
  return style === undefined ? INVALID : { kind: 'style', style }
}

/** Guards upstream configuration: is `value` a native key case an upstream may declare? */
export function isKeyCase (value: unknown): value is KeyCase {
  return typeof value === 'string' && (KEY_CASES as readonly string[]).includes(value)
}
