import { readFileSync } from 'node:fs'
import { join, posix } from 'node:path'
import { REPO_ROOT } from './code-facts.js'
import { claim, secretFiles, type DeployTree } from './deploy-files.js'
import { SECRET_NAME, type Problems } from './problems.js'

export const README = 'deploy/README.md'
export const MAKE_SECRETS = 'deploy/make-secrets.sh'
/** What a committed file may give a credential: nothing, an interpolation of itself, a generator command, a <placeholder>. */
const SAFE_VALUE = (name: string): RegExp => new RegExp(`^(\\$\\{${name}:\\?|\\$\\(openssl rand|<[a-z][^>]*>$|$)`)
/** `NAME=value` or `NAME: value`, not the name inside an interpolation (`${NAME:?…}`). */
const ASSIGNMENT = /(?<!\$\{)\b([A-Z][A-Z0-9_]*)\s*[=:][ \t]*["']?([^\s,;'"`]*)/g

/** Whether a word looks like key material: long, and hex or mixed-case with digits. */
export function looksLikeSecret (word: string): boolean {
  if (word.length < 32) return false
  if (/^[0-9a-f]+$/i.test(word)) return /\d/.test(word) && /[a-f]/i.test(word)
  return /\d/.test(word) && /[a-z]/.test(word) && /[A-Z]/.test(word)
}

/**
 * No committed file holds a credential: assignments to *_TOKEN/*_KEY/… names carry no
 * literal value, no word anywhere looks like key material, the examples leave secrets
 * empty, and each file they stand for is gitignored and kept out of the image's build
 * context.
 */
export function checkNoCommittedSecrets (tree: DeployTree, problems: Problems, gitignore = readFileSync(join(REPO_ROOT, '.gitignore'), 'utf8')): void {
  for (const file of tree.files.values()) {
    file.text.split('\n').forEach((line, index) => {
      for (const [, name, value] of line.matchAll(ASSIGNMENT)) {
        if (SECRET_NAME.test(name as string) && !SAFE_VALUE(name as string).test(value as string)) {
          problems.add(file.path, `line ${index + 1}`, `${name as string} is given a literal value: credentials come from the gitignored secret files`)
        }
      }
      for (const word of line.match(/[A-Za-z0-9+_-]{32,}={0,2}/g) ?? []) {
        if (looksLikeSecret(word)) problems.add(file.path, `line ${index + 1}`, `"${word.slice(0, 6)}…" looks like key material: never commit a secret`)
      }
    })
    if (file.kind === 'env-example') {
      for (const entry of file.entries) {
        if (SECRET_NAME.test(entry.name) && entry.value !== '') problems.add(file.path, `line ${entry.line}`, `${entry.name}: an example never holds a credential; leave it empty`)
      }
    }
  }
  const ignored = new Set(gitignore.split('\n').map((l) => l.trim().replace(/^\//, '')))
  for (const path of secretFiles(tree)) {
    if (!ignored.has(path)) problems.add('.gitignore', '', `${path} (the filled-in ${posix.basename(path)}.example) must be ignored: it holds credentials`)
  }
}

/** The secret-making script: strict bash, private files, fresh 256-bit values, every example covered. */
export function checkShellScripts (tree: DeployTree, problems: Problems): void {
  for (const file of [...tree.files.values()].filter((f) => f.kind === 'shell')) {
    claim(tree, file.path, 'shell')
    if (!/^#!\/usr\/bin\/env bash\n/.test(file.text)) problems.add(file.path, 'line 1', 'start with #!/usr/bin/env bash')
    if (!/^set -euo pipefail$/m.test(file.text)) problems.add(file.path, '', 'set -euo pipefail: stop at the first failure')
  }
  const script = tree.files.get(MAKE_SECRETS)
  if (script === undefined) {
    problems.add(MAKE_SECRETS, '', 'missing: it creates the gitignored secret files')
    return
  }
  if (!/openssl rand -hex 32/.test(script.text)) problems.add(MAKE_SECRETS, '', 'generate each secret with `openssl rand -hex 32` (256 bits, 64 characters)')
  if (!/^umask 077$/m.test(script.text)) problems.add(MAKE_SECRETS, '', 'umask 077: the secret files must be readable by their owner only')
  for (const path of secretFiles(tree)) {
    const relative = posix.relative('deploy', path)
    if (!script.text.includes(`"$here/${relative}.example" "$here/${relative}"`)) problems.add(MAKE_SECRETS, '', `does not create ${path} from ${relative}.example`)
  }
}

/** deploy/README.md names every file of deploy/ (and the secret files it tells you to create). */
export function checkReadme (tree: DeployTree, problems: Problems): void {
  const readme = claim(tree, README, 'markdown')
  if (readme === undefined) {
    problems.add(README, '', 'missing')
    return
  }
  for (const path of [...tree.files.keys(), ...secretFiles(tree)].filter((p) => p !== README)) {
    const relative = posix.relative('deploy', path)
    if (!readme.text.includes(relative)) problems.add(README, '', `does not mention ${relative}: say what it is for`)
  }
  for (const phrase of ['single writer', 'Litestream']) {
    if (!readme.text.includes(phrase)) problems.add(README, '', `does not explain why identity never scales and how SQLite is backed up ("${phrase}")`)
  }
}

/** Every file of deploy/ was used by some check: none is there unchecked. */
export function checkAllClaimed (tree: DeployTree, problems: Problems): void {
  for (const path of tree.files.keys()) {
    if (!tree.claimed.has(path)) problems.add(path, '', 'not used by compose.yaml, kustomization.yaml, the Dockerfile or the README checks: nothing checks it; wire it in or remove it')
  }
}

/**
 * Each JSON file of deploy/grafana/ is a Grafana dashboard one can import: a uid, a
 * title and panels with PromQL targets (what they read is checked against a live
 * scrape by test/deploy/grafana-dashboard.test.ts).
 */
export function checkDashboards (tree: DeployTree, problems: Problems): void {
  for (const path of [...tree.files.keys()].filter((p) => p.startsWith('deploy/grafana/'))) {
    const file = claim(tree, path, 'json')
    if (file === undefined) {
      problems.add(path, '', 'deploy/grafana/ holds Grafana dashboards (JSON) only')
      continue
    }
    const dashboard = file.value as { uid?: unknown, title?: unknown, panels?: unknown }
    if (typeof dashboard.uid !== 'string' || typeof dashboard.title !== 'string') problems.add(path, '', 'a dashboard needs a uid and a title')
    if (!Array.isArray(dashboard.panels) || dashboard.panels.length === 0) problems.add(path, 'panels', 'a dashboard without panels')
  }
}

export const GITLEAKS_RULES = 'deploy/secret-scanning/gitleaks.toml'
export const SECRET_SCANNING_README = 'deploy/secret-scanning/README.md'

/** The secret scanning rules are there (what they match is test/meta/secret-scanning.test.ts's). */
export function checkSecretScanning (tree: DeployTree, problems: Problems): void {
  if (claim(tree, GITLEAKS_RULES, 'toml') === undefined) problems.add(GITLEAKS_RULES, '', 'missing: the gitleaks rule for API keys')
  const readme = claim(tree, SECRET_SCANNING_README, 'markdown')
  if (readme === undefined) problems.add(SECRET_SCANNING_README, '', 'missing: the GitHub custom pattern for API keys')
  else if (!readme.text.includes('Secret format')) problems.add(SECRET_SCANNING_README, '', 'does not give the GitHub custom pattern ("Secret format")')
}

/** The verify API's proxy examples: each points at its own verify shape; the two the tests run keep the addresses they fill in. */
const VERIFY_EXAMPLES: Array<[string, 'proxy-config' | 'yaml', string]> = [
  ['deploy/verify/nginx.conf', 'proxy-config', '/v1/verify/nginx'],
  ['deploy/verify/Caddyfile', 'proxy-config', '/v1/verify/forward-auth'],
  ['deploy/verify/traefik.yaml', 'yaml', '/v1/verify/forward-auth'],
  ['deploy/verify/envoy.yaml', 'yaml', '/v1/verify/envoy']
]

export function checkVerifyExamples (tree: DeployTree, problems: Problems): void {
  for (const [path, kind, endpoint] of VERIFY_EXAMPLES) {
    const file = claim(tree, path, kind)
    if (file === undefined) {
      problems.add(path, '', 'missing: docs/verify-api.md points at it')
      continue
    }
    if (!file.text.includes(endpoint)) problems.add(path, '', `does not ask ${endpoint}`)
    if (kind === 'proxy-config') {
      for (const placeholder of ['{{LISTEN}}', '{{UPSTREAM}}', '{{VERIFY}}']) {
        if (!file.text.includes(placeholder)) problems.add(path, '', `lacks ${placeholder}, which the verify tests fill in to run it`)
      }
    }
  }
}
