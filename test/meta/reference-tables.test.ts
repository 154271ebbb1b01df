import t from 'tap'
import { readFileSync } from 'node:fs'
import type { Registry } from 'prom-client'
import type { TObject } from 'typebox'
import { AuthProblems, CommonProblems } from '../../common/problem.js'
import { GatewayEnvSchema } from '../../gateway/config.js'
import { GatewayProblems } from '../../gateway/errors.js'
import { createGatewayMetrics } from '../../gateway/observability/metrics.js'
import { GatewayOptionsSchema } from '../../gateway/options.js'
import { createSupervisionMetrics } from '../../gateway/workers/metrics.js'
import { UpstreamsFileSchema } from '../../gateway/routing/schema.js'
import { IdentityEnvSchema } from '../../identity/config.js'
import { ConsoleEnvSchema } from '../../console/config.js'
import { IdentityProblems } from '../../identity/errors.js'
import { createIdentityMetrics } from '../../identity/observability/metrics.js'
import { UpstreamMockEnvSchema } from '../../upstream-mock/config.js'
import { UpstreamMockProblems } from '../../upstream-mock/errors.js'
import { CliProblems } from '../../cli/problems.js'
import { section, tableRows } from './markdown.js'
import { repoPath } from '../helpers/repo-root.js'

/** The reference tables of docs/ are documentation users rely on: they must not drift. */
const doc = (name: string): string => readFileSync(repoPath('docs', name), 'utf8')
const configuration = doc('configuration.md')
const errors = doc('errors.md')
const operations = doc('operations.md')

const ENVIRONMENTS: Array<[string, TObject]> = [
  ['Identity environment', IdentityEnvSchema],
  ['Gateway environment', GatewayEnvSchema],
  ['Upstream-mock environment', UpstreamMockEnvSchema],
  ['Console environment', ConsoleEnvSchema]
]

for (const [heading, schemaObject] of ENVIRONMENTS) {
  t.test(`every variable of "${heading}" is documented with its default`, async (t) => {
    const rows = tableRows(section(configuration, heading), /^[A-Z][A-Z0-9_]+$/)
    const schema = schemaObject.properties as Record<string, { default?: unknown }>
    t.same([...rows.keys()].sort(), Object.keys(schema).sort(), 'same variables in docs/configuration.md and schema')
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
    const rows = tableRows(section(configuration, heading), /^[a-zA-Z][\w.[\]]*$/)
    const fields = fieldsOf(schema, opaque)
    t.same([...rows.keys()].sort(), [...fields.keys()].sort(), 'same fields in docs/configuration.md and schema')
    for (const [path, expected] of fields) {
      const documented = rows.get(path)?.[0]
      if (expected === 'unset') t.match(documented, /^\(unset\)$|^`null`$/, `${path} is optional without a default`)
      else t.equal(documented, expected, `${path} default`)
    }
  })
}

t.test('every problem code has one docs/errors.md row with its status and title', async (t) => {
  const rows = tableRows(section(errors, 'Problem codes'), /^[a-z][a-z0-9_]+$/)
  // Identity re-exports the shared auth problems: count each problem once.
  const problems = [...new Set([...Object.values(CommonProblems), ...Object.values(AuthProblems),
    ...Object.values(IdentityProblems), ...Object.values(GatewayProblems), ...Object.values(UpstreamMockProblems),
    ...Object.values(CliProblems)])]
  const codes = problems.map((p) => p.code)
  t.equal(new Set(codes).size, codes.length, 'codes are never reused')
  for (const problem of problems) {
    t.same(rows.get(problem.code), [String(problem.status), problem.title], problem.code)
  }
})

/** The series a registry declares, without prom-client's process and Node.js metrics (documented as a set, by their standard names). */
function ownMetrics (registry: Registry): Map<string, string[]> {
  const metrics = registry.getMetricsAsArray() as unknown as Array<{ name: string, labelNames: string[] }>
  return new Map(metrics.filter((m) => m.name.startsWith('portier_')).map((m) => [m.name, [...m.labelNames]]))
}

const METRICS: Array<[string, () => Map<string, string[]>]> = [
  // A clustered gateway's primary serves its own series beside the workers' sum, under the same table.
  ['Gateway metrics', () => new Map([
    ...ownMetrics(createGatewayMetrics().registry),
    ...ownMetrics(createSupervisionMetrics(() => 0).registry)
  ])],
  ['Identity metrics', () => ownMetrics(createIdentityMetrics({ processMetrics: false }).registry)]
]

for (const [heading, declared] of METRICS) {
  t.test(`every series of "${heading}" is documented with its labels`, async (t) => {
    const rows = tableRows(section(operations, heading), /^portier_[a-z0-9_]+$/)
    const metrics = declared()
    t.same([...rows.keys()].sort(), [...metrics.keys()].sort(), 'same series in docs/operations.md and the code')
    for (const [name, labels] of metrics) {
      const documented = [...(rows.get(name)?.[0] ?? '').matchAll(/`([^`]+)`/g)].map((m) => m[1])
      t.same(documented.sort(), [...labels].sort(), `${name} labels`)
    }
  })
}
