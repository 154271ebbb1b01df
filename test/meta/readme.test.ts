import t from 'tap'
import { readFileSync } from 'node:fs'
import { CommonProblems } from '../../common/problem.js'
import { IdentityEnvSchema } from '../../identity/config.js'
import { IdentityProblems } from '../../identity/errors.js'

/** The README's reference tables are documentation users rely on: they must not drift. */
const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8')

function tableRows (firstCell: RegExp): Map<string, string[]> {
  const rows = new Map<string, string[]>()
  for (const line of readme.split('\n')) {
    const cells = line.split('|').slice(1, -1).map((c) => c.trim())
    const name = /^`([^`]+)`$/.exec(cells[0] ?? '')?.[1]
    if (name !== undefined && firstCell.test(name)) rows.set(name, cells.slice(1))
  }
  return rows
}

t.test('every identity environment variable is documented with its default', async (t) => {
  const rows = tableRows(/^[A-Z][A-Z0-9_]+$/)
  const schema = IdentityEnvSchema.properties as Record<string, { default?: unknown }>
  t.same([...rows.keys()].sort(), Object.keys(schema).sort(), 'same variables in README and schema')
  for (const [name, property] of Object.entries(schema)) {
    const documented = rows.get(name)?.[0]
    if (property.default === undefined) t.match(documented, /required|unset/, `${name} has no default`)
    else t.equal(documented, `\`${String(property.default)}\``, `${name} default`)
  }
})

t.test('every problem code has one README row with its status and title', async (t) => {
  const rows = tableRows(/^[a-z][a-z0-9_]+$/)
  const problems = [...Object.values(CommonProblems), ...Object.values(IdentityProblems)]
  const codes = problems.map((p) => p.code)
  t.equal(new Set(codes).size, codes.length, 'codes are never reused')
  for (const problem of problems) {
    t.same(rows.get(problem.code), [String(problem.status), problem.title], problem.code)
  }
})
