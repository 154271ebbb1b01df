import t from 'tap'
import { relative } from 'node:path'
import { ESLint } from 'eslint'
import { REPO_ROOT } from '../helpers/repo-root.js'

/**
 * The whole tree passes the linter (neostandard through eslint.config.js), so style is
 * settled by one tool rather than in review. `npx eslint --fix .` mends most findings.
 */
const ROOT = REPO_ROOT

t.test('every file passes the linter', async (t) => {
  const eslint = new ESLint({ cwd: ROOT })
  const results = await eslint.lintFiles(['.'])
  t.ok(results.length > 300, `${results.length} files linted`)
  const findings = results.flatMap((result) => result.messages.map((m) =>
    `${relative(ROOT, result.filePath)}:${m.line}:${m.column} ${m.message} (${m.ruleId ?? 'parse'})`))
  t.same(findings, [], 'no finding')
})
