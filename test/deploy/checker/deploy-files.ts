import { readdirSync, readFileSync } from 'node:fs'
import { basename, join, relative } from 'node:path'
import { parseAllDocuments } from 'yaml'
import { parseDockerfile, type Dockerfile } from './parse-dockerfile.js'
import { parseEnvFile, type EnvFileEntry } from './parse-env-file.js'
import { parseHaproxy, type HaproxySection } from './parse-haproxy.js'
import type { Problems } from './problems.js'

export type DeployFile =
  | { kind: 'yaml', path: string, text: string, docs: unknown[] }
  | { kind: 'dockerfile', path: string, text: string, dockerfile: Dockerfile }
  | { kind: 'dockerignore', path: string, text: string, patterns: string[] }
  | { kind: 'haproxy', path: string, text: string, sections: HaproxySection[] }
  | { kind: 'env-example', path: string, text: string, entries: EnvFileEntry[] }
  | { kind: 'markdown', path: string, text: string }
  | { kind: 'shell', path: string, text: string }
  | { kind: 'json', path: string, text: string, value: unknown }
  | { kind: 'toml', path: string, text: string }
  /** nginx's and Caddy's own formats: run by the verify tests (test/gateway/verify/real-proxies.test.ts), which are their parser. */
  | { kind: 'proxy-config', path: string, text: string }

export type DeployFileKind = DeployFile['kind']

/**
 * Every file under deploy/, parsed by type, keyed by its path from the repository root
 * (`deploy/compose.yaml`). A file of no known type is a problem, so a new file cannot
 * slip past the checks; each check then claims the files it used, and a file nobody
 * claimed is a problem too.
 */
export interface DeployTree {
  files: Map<string, DeployFile>
  /** Local, gitignored secret files (`X` beside a committed `X.example`): never read. */
  localSecrets: string[]
  claimed: Set<string>
}

const RULES: Array<[RegExp, DeployFileKind]> = [
  [/(^|\/)Dockerfile$/, 'dockerfile'],
  [/\.dockerignore$/, 'dockerignore'],
  [/\.ya?ml$/, 'yaml'],
  [/(^|\/)haproxy\/[^/]+\.cfg$/, 'haproxy'],
  [/(^|\/|\.)env\.example$/, 'env-example'],
  [/\.md$/, 'markdown'],
  [/\.sh$/, 'shell'],
  [/\.json$/, 'json'],
  [/\.toml$/, 'toml'],
  [/(^|\/)verify\/(nginx\.conf|Caddyfile)$/, 'proxy-config']
]

export function kindOf (path: string): DeployFileKind | null {
  return RULES.find(([pattern]) => pattern.test(path))?.[1] ?? null
}

function listFiles (dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? listFiles(join(dir, entry.name)) : [join(dir, entry.name)])
}

/** Parses one file's text by kind; a parse error is thrown with the place it happened. */
export function parseDeployFile (path: string, kind: DeployFileKind, text: string): DeployFile {
  switch (kind) {
    case 'yaml': {
      const docs = parseAllDocuments(text, { merge: true })
      const list = Array.isArray(docs) ? docs : []
      for (const doc of list) {
        if (doc.errors.length > 0) throw new Error(doc.errors.map((e) => e.message).join('; '))
      }
      return { kind, path, text, docs: list.map((doc) => doc.toJS({ maxAliasCount: 100 })).filter((doc) => doc !== null) }
    }
    case 'dockerfile': return { kind, path, text, dockerfile: parseDockerfile(text) }
    case 'dockerignore': return { kind, path, text, patterns: text.split('\n').map((l) => l.trim()).filter((l) => l !== '' && !l.startsWith('#')) }
    case 'haproxy': return { kind, path, text, sections: parseHaproxy(text) }
    case 'env-example': return { kind, path, text, entries: parseEnvFile(text) }
    case 'markdown': return { kind, path, text }
    case 'shell': return { kind, path, text }
    case 'json': return { kind, path, text, value: JSON.parse(text) as unknown }
    // Read and checked by test/meta/secret-scanning.test.ts, the one TOML file's reader.
    case 'toml': return { kind, path, text }
    case 'proxy-config': return { kind, path, text }
  }
}

/** Reads and parses deploy/ under `repoRoot`; unknown types and parse errors go to `problems`. */
export function loadDeployTree (repoRoot: string, problems: Problems): DeployTree {
  const paths = listFiles(join(repoRoot, 'deploy')).map((p) => relative(repoRoot, p).split('\\').join('/')).sort()
  const examples = new Set(paths.filter((p) => p.endsWith('.example')).map((p) => p.slice(0, -'.example'.length)))
  const tree: DeployTree = { files: new Map(), localSecrets: [], claimed: new Set() }
  for (const path of paths) {
    if (examples.has(path)) {
      tree.localSecrets.push(path)
      continue
    }
    const kind = kindOf(path)
    if (kind === null) {
      problems.add(path, '', `unknown file type: the deploy test cannot check "${basename(path)}"; teach test/deploy/checker/deploy-files.ts to parse it`)
      continue
    }
    try {
      tree.files.set(path, parseDeployFile(path, kind, readFileSync(join(repoRoot, path), 'utf8')))
    } catch (err) {
      problems.add(path, '', `cannot be parsed as ${kind}: ${(err as Error).message}`)
    }
  }
  return tree
}

/** The parsed file at `path` if it exists and is of `kind`; records it as used. */
export function claim<K extends DeployFileKind> (tree: DeployTree, path: string, kind: K): Extract<DeployFile, { kind: K }> | undefined {
  const file = tree.files.get(path)
  if (file === undefined || file.kind !== kind) return undefined
  tree.claimed.add(path)
  return file as Extract<DeployFile, { kind: K }>
}

/** The gitignored files the committed examples stand for (`deploy/.env` for `deploy/.env.example`). */
export function secretFiles (tree: DeployTree): string[] {
  return [...tree.files.values()].filter((f) => f.kind === 'env-example').map((f) => f.path.slice(0, -'.example'.length))
}
