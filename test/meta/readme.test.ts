import t from 'tap'
import { readFileSync } from 'node:fs'
import type { TObject } from 'typebox'
import { AuthProblems, CommonProblems } from '../../common/problem.js'
import { GatewayEnvSchema } from '../../gateway/config.js'
import { GatewayProblems } from '../../gateway/errors.js'
import { GatewayOptionsSchema } from '../../gateway/options.js'
import { UpstreamsFileSchema } from '../../gateway/routing/schema.js'
import { IdentityEnvSchema } from '../../identity/config.js'
import { IdentityProblems } from '../../identity/errors.js'
import { UpstreamMockEnvSchema } from '../../upstream-mock/config.js'
import { UpstreamMockProblems } from '../../upstream-mock/errors.js'

/** The README's reference tables are documentation users rely on: they must not drift. */
const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8')

/** The text under a `###` heading, up to the next heading. */
function section (heading: string): string {
  const start = readme.indexOf(`\n### ${heading}\n`)
  if (start === -1) return ''
  const end = readme.slice(start + heading.length + 6).search(/\n#{1,3} /)
  return end === -1 ? readme.slice(start) : readme.slice(start, start + heading.length + 6 + end)
}

function tableRows (text: string, firstCell: RegExp): Map<string, string[]> {
  const rows = new Map<string, string[]>()
  for (const line of text.split('\n')) {
    const cells = line.split('|').slice(1, -1).map((c) => c.trim())
    const name = /^`([^`]+)`$/.exec(cells[0] ?? '')?.[1]
    if (name !== undefined && firstCell.test(name)) rows.set(name, cells.slice(1))
  }
  return rows
}

const ENVIRONMENTS: Array<[string, TObject]> = [
  ['Identity environment', IdentityEnvSchema],
  ['Gateway environment', GatewayEnvSchema],
  ['Upstream-mock environment', UpstreamMockEnvSchema]
]

for (const [heading, schemaObject] of ENVIRONMENTS) {
  t.test(`every variable of "${heading}" is documented with its default`, async (t) => {
    const rows = tableRows(section(heading), /^[A-Z][A-Z0-9_]+$/)
    const schema = schemaObject.properties as Record<string, { default?: unknown }>
    t.same([...rows.keys()].sort(), Object.keys(schema).sort(), 'same variables in README and schema')
    for (const [name, property] of Object.entries(schema)) {
      const documented = rows.get(name)?.[0]
      if (property.default === undefined) t.match(documented, /required|unset/, `${name} has no default`)
      else t.equal(documented, `\`${String(property.default)}\``, `${name} default`)
    }
  })
}

interface SchemaNode { type?: unknown, properties?: Record<string, SchemaNode>, required?: string[], items?: SchemaNode, default?: unknown }

/**
 * Every field of a config schema as a documented path (`upstreams[].routes[].method`),
 * with its default, or `required` when it has none and must be given. Objects with
 * declared members and arrays of them are walked; `opaque` paths are leaves.
 */
function fieldsOf (node: SchemaNode, opaque: Set<string>, prefix = '', out = new Map<string, string>()): Map<string, string> {
  for (const [name, child] of Object.entries(node.properties ?? {})) {
    const path = `${prefix}${name}`
    const required = (node.required ?? []).includes(name) && child.default === undefined
    out.set(path, child.default !== undefined ? `\`${JSON.stringify(child.default).replace(/^"|"$/g, '')}\`` : required ? 'required' : 'unset')
    if (opaque.has(path)) continue
    if (child.properties !== undefined) fieldsOf(child, opaque, `${path}.`, out)
    if (child.items?.properties !== undefined) fieldsOf(child.items, opaque, `${path}[].`, out)
  }
  return out
}

const CONFIG_FIELDS: Array<[string, SchemaNode, Set<string>]> = [
  ['Upstreams file', UpstreamsFileSchema as unknown as SchemaNode, new Set()],
  ['Gateway plugin options', GatewayOptionsSchema as unknown as SchemaNode, new Set(['upstreams'])]
]

for (const [heading, schema, opaque] of CONFIG_FIELDS) {
  t.test(`every field of "${heading}" is documented with its default`, async (t) => {
    const rows = tableRows(section(heading), /^[a-zA-Z][\w.[\]]*$/)
    const fields = fieldsOf(schema, opaque)
    t.same([...rows.keys()].sort(), [...fields.keys()].sort(), 'same fields in README and schema')
    for (const [path, expected] of fields) {
      const documented = rows.get(path)?.[0]
      if (expected === 'unset') t.match(documented, /^\(unset\)$|^`null`$/, `${path} is optional without a default`)
      else t.equal(documented, expected, `${path} default`)
    }
  })
}

t.test('every problem code has one README row with its status and title', async (t) => {
  const rows = tableRows(readme, /^[a-z][a-z0-9_]+$/)
  // Identity re-exports the shared auth problems: count each problem once.
  const problems = [...new Set([...Object.values(CommonProblems), ...Object.values(AuthProblems),
    ...Object.values(IdentityProblems), ...Object.values(GatewayProblems), ...Object.values(UpstreamMockProblems)])]
  const codes = problems.map((p) => p.code)
  t.equal(new Set(codes).size, codes.length, 'codes are never reused')
  for (const problem of problems) {
    t.same(rows.get(problem.code), [String(problem.status), problem.title], problem.code)
  }
})
