import t from 'tap'
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative, resolve, sep } from 'node:path'
import { anchors, links } from './markdown.js'
import { REPO_ROOT } from '../helpers/repo-root.js'

/**
 * Every relative link of the README, of docs/ and of the folder READMEs leads to a file
 * of the repository, and every `#anchor` to a heading of its target, as GitHub renders
 * them: moving or renaming a section cannot leave a reader on a dead link.
 */
const ROOT = REPO_ROOT

function markdownUnder (folder: string): string[] {
  return readdirSync(join(ROOT, folder), { withFileTypes: true }).flatMap((entry) => {
    const path = join(folder, entry.name)
    if (entry.isDirectory()) return markdownUnder(path)
    return entry.name.endsWith('.md') ? [path] : []
  })
}

const FOLDER_READMES = readdirSync(ROOT, { withFileTypes: true })
  .filter((entry) => entry.isDirectory() && !entry.name.startsWith('.') && entry.name !== 'node_modules')
  .map((entry) => join(entry.name, 'README.md'))
  .filter((path) => existsSync(join(ROOT, path)))
const DOCUMENTS = ['README.md', ...markdownUnder('docs'), ...FOLDER_READMES]

const anchorCache = new Map<string, Set<string>>()
function anchorsOf (path: string): Set<string> {
  let found = anchorCache.get(path)
  if (found === undefined) {
    found = anchors(readFileSync(path, 'utf8'))
    anchorCache.set(path, found)
  }
  return found
}

/** What is wrong with `target` linked from `document`, or null. */
function problemOf (document: string, target: string): string | null {
  if (/^[a-z][a-z0-9+.-]*:/i.test(target)) return null
  const [pathPart = '', anchor] = target.split('#', 2)
  const path = pathPart === '' ? join(ROOT, document) : resolve(ROOT, dirname(document), decodeURIComponent(pathPart))
  const inside = relative(ROOT, path)
  if (inside.startsWith(`..${sep}`) || inside === '..') return 'leads outside the repository'
  if (!existsSync(path)) return `no such file: ${inside}`
  if (anchor === undefined || anchor === '') return null
  if (!statSync(path).isFile() || !path.endsWith('.md')) return `an anchor into ${inside}, which is not a Markdown file`
  return anchorsOf(path).has(decodeURIComponent(anchor)) ? null : `no heading with the anchor #${anchor} in ${inside}`
}

t.test('the documents exist', async (t) => {
  t.ok(DOCUMENTS.includes(join('docs', 'configuration.md')), 'docs/ is read')
  t.ok(DOCUMENTS.includes(join('gateway', 'README.md')), 'folder READMEs are read')
})

t.test('every relative link resolves, anchors included', async (t) => {
  const problems: string[] = []
  let checked = 0
  for (const document of DOCUMENTS) {
    for (const link of links(readFileSync(join(ROOT, document), 'utf8'))) {
      checked++
      const problem = problemOf(document, link.target)
      if (problem !== null) problems.push(`${document}:${link.line}: ${link.target}: ${problem}`)
    }
  }
  t.ok(checked > 20, `links were found (${checked})`)
  t.same(problems, [], 'no broken link')
})

t.test('the checker itself: slugs and broken links are recognised', async (t) => {
  const sample = '# The contract\n\n## `GET /users`, alias `/utilisateurs`\n\n## What propagates, and how fast\n\n## Notes\n\n## Notes\n\n```sh\n# not a heading\n```\n'
  t.same([...anchors(sample)], ['the-contract', 'get-users-alias-utilisateurs', 'what-propagates-and-how-fast', 'notes', 'notes-1'])
  t.same(links('[a](docs/x.md#y) `[b](c.md)`\n```\n[d](e.md)\n```\n![i](img.svg "t")').map((l) => l.target), ['docs/x.md#y', 'img.svg'])
  t.equal(problemOf('README.md', '../elsewhere/notes.md'), 'leads outside the repository')
  t.match(problemOf('README.md', 'docs/nowhere.md'), /no such file/)
  t.match(problemOf('README.md', 'docs/configuration.md#no-such-heading'), /no heading/)
  t.equal(problemOf('README.md', 'https://example.com/a#b'), null)
})
