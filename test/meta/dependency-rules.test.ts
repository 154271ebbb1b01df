import t from 'tap'
import { join } from 'node:path'
import { cruise, type ICruiseOptions, type IViolation } from 'dependency-cruiser'
import extractDepcruiseOptions from 'dependency-cruiser/config-utl/extract-depcruise-options'
import { REPO_ROOT } from '../helpers/repo-root.js'

/**
 * The architecture holds in the import graph: the rules in .dependency-cruiser.cjs find
 * nothing in the tree, and each rule is shown to catch what it forbids on a small
 * fixture tree that breaks every one of them.
 */
const ROOT = REPO_ROOT
const FIXTURE = join(ROOT, 'test/meta/fixtures/architecture')
const FOLDERS = ['common', 'gateway', 'identity', 'console', 'upstream-mock', 'cli', 'demo', 'bench', 'harness', 'test']

async function violationsIn (baseDir: string, options: ICruiseOptions): Promise<IViolation[]> {
  const { existsSync } = await import('node:fs')
  const folders = FOLDERS.filter((folder) => existsSync(join(baseDir, folder)))
  const result = await cruise(folders, { ...options, baseDir, validate: true }, undefined, {})
  if (typeof result.output === 'string') throw new Error('dependency-cruiser gave a report, not a result')
  return result.output.summary.violations
}

const describe = (v: IViolation): string => `${v.rule.name}: ${v.from} → ${v.to}${v.cycle === undefined ? '' : ` (${v.cycle.map((step) => step.name).join(' → ')})`}`

t.test('the dependency rules', async (t) => {
  const options = await extractDepcruiseOptions(join(ROOT, '.dependency-cruiser.cjs'))
  const ruleNames = (options.ruleSet?.forbidden ?? []).map((rule) => rule.name ?? '')

  await t.test('the tree breaks none of them', async (t) => {
    const violations = await violationsIn(ROOT, { ...options, tsConfig: { fileName: join(ROOT, 'tsconfig.json') } })
    t.same(violations.map(describe), [], 'no violation')
  })

  await t.test('each rule catches what it forbids', async (t) => {
    const { tsConfig: _tsConfig, ...withoutTsConfig } = options
    const violations = await violationsIn(FIXTURE, withoutTsConfig)
    const caught = new Set(violations.map((v) => v.rule.name))
    t.ok(ruleNames.length >= 8, `${ruleNames.length} rules`)
    for (const name of ruleNames) t.ok(caught.has(name), `${name} catches its case`)
    // The fixture files that obey the rules are not reported.
    t.notOk(violations.some((v) => v.from === 'cli/command.ts'), 'cli/ may import commander')
    t.notOk(violations.some((v) => v.from === 'identity/user.ts' && v.rule.name !== 'no-cycles'), 'a service may import its own files')
  })
})
