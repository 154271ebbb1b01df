import t from 'tap'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { ESLint } from 'eslint'
import { REPO_ROOT } from '../helpers/repo-root.js'

/**
 * The types check what the code claims, and stay that way: the compiler's strict
 * index and optional-property checks are on, the linter refuses promises left
 * floating or passed where a callback's result is ignored, and the request path's
 * modules hold no cast that silences the compiler.
 */
const REQUEST_PATH = [
  'gateway/request-path.ts', 'gateway/refusals.ts', 'gateway/routing/route-request.ts', 'gateway/auth/authenticate.ts',
  'gateway/auth/authorise.ts', 'gateway/traffic/traffic-control.ts', 'gateway/traffic/fair-share.ts', 'gateway/proxy/forward.ts',
  'gateway/proxy/forward-headers.ts', 'gateway/proxy/request-body.ts', 'gateway/websocket/websocket-proxy.ts'
]

t.test('the compiler checks indexes and optional properties', async (t) => {
  const options = (JSON.parse(readFileSync(join(REPO_ROOT, 'tsconfig.json'), 'utf8')) as { compilerOptions: Record<string, unknown> }).compilerOptions
  t.equal(options.strict, true, 'strict')
  t.equal(options.noUncheckedIndexedAccess, true, 'noUncheckedIndexedAccess')
  t.equal(options.exactOptionalPropertyTypes, true, 'exactOptionalPropertyTypes')
})

t.test('the linter refuses floating and misused promises', async (t) => {
  const config = await new ESLint({ cwd: REPO_ROOT }).calculateConfigForFile(join(REPO_ROOT, 'gateway/request-path.ts')) as { rules: Record<string, unknown[]> }
  for (const rule of ['@typescript-eslint/no-floating-promises', '@typescript-eslint/no-misused-promises']) {
    t.equal(config.rules[rule]?.[0], 2, `${rule} is an error`)
  }
})

t.test('no cast silences the compiler on the request path', async (t) => {
  for (const file of REQUEST_PATH) {
    const source = readFileSync(join(REPO_ROOT, file), 'utf8')
    t.notMatch(source, /\bas unknown as\b|\bas never\b/, `${file}: no "as unknown as" or "as never"`)
  }
})
