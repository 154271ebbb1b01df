import t from 'tap'
import { readdirSync, readFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { REPO_ROOT } from '../helpers/repo-root.js'

/**
 * Product files speak of the product: no issue numbers, and no documents outside the
 * repository (a design note or a shared folder a reader of the repository cannot open).
 */
const PRODUCT = ['README.md', 'docs', 'common', 'gateway', 'identity', 'upstream-mock', 'cli', 'demo', 'deploy', 'bench', 'harness']
const TEXT = /\.(ts|md|ya?ml|sh|json|cfg)$/
const SKIPPED = new Set(['results'])
const FORBIDDEN: Array<[string, RegExp]> = [
  ['an issue number', /\bissues? #?\d+/i],
  ['a DESIGN.md', /DESIGN\.md/],
  ['a folder outside the repository', /\.\.\/shared\b/]
]

function filesUnder (path: string): string[] {
  const entries = readdirSync(join(REPO_ROOT, path), { withFileTypes: true })
  return entries.flatMap((entry) => {
    const child = join(path, entry.name)
    if (entry.isDirectory()) return SKIPPED.has(entry.name) ? [] : filesUnder(child)
    return TEXT.test(entry.name) ? [child] : []
  })
}

t.test('no product file refers to an issue or to a document outside the repository', async (t) => {
  const files = PRODUCT.flatMap((path) => path.endsWith('.md') ? [path] : filesUnder(path))
  t.ok(files.length > 150, `${files.length} files read`)
  const found = files.flatMap((file) => readFileSync(join(REPO_ROOT, file), 'utf8').split('\n').flatMap((line, i) =>
    FORBIDDEN.filter(([, pattern]) => pattern.test(line)).map(([what]) => `${relative('.', file)}:${i + 1}: ${what}`)))
  t.same(found, [], 'none')
  t.ok(FORBIDDEN.every(([, pattern]) => !pattern.test('ordinary text')) && FORBIDDEN.some(([, pattern]) => pattern.test('see issue 13')),
    'control: the patterns tell one from the other')
})

t.test('the README stays a guide a newcomer reads in minutes; the rest lives in docs/', async (t) => {
  const lines = readFileSync(join(REPO_ROOT, 'README.md'), 'utf8').split('\n').length
  t.ok(lines <= 300, `README.md: ${lines} lines (at most 300)`)
})
