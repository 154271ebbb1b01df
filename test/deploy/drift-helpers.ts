import type { Test } from 'tap'
import { kindOf, loadDeployTree, parseDeployFile, Problems, REPO_ROOT, type DeployTree, type KubernetesInput, type Node } from './checker/index.js'

/** A fresh parse of deploy/ (each check claims files, so every case starts clean). */
export function freshTree (): DeployTree {
  const problems = new Problems()
  const tree = loadDeployTree(REPO_ROOT, problems)
  if (problems.lines.length > 0) throw new Error(problems.lines.join('\n'))
  return tree
}

export function textOf (tree: DeployTree, path: string): string {
  const file = tree.files.get(path)
  if (file === undefined) throw new Error(`${path} is not in deploy/`)
  return file.text
}

/** Replaces `from` (which must be there, so the drift is real) in a text. */
export function edit (text: string, from: string, to: string): string {
  if (!text.includes(from)) throw new Error(`the drift test expects ${JSON.stringify(from)} in the file; update the test`)
  return text.replace(from, to)
}

/** The tree with one file's text replaced, as if it had been edited on disk. */
export function withFile (tree: DeployTree, path: string, text: string): DeployTree {
  const kind = kindOf(path)
  if (kind === null) throw new Error(`${path}: unknown kind`)
  const files = new Map(tree.files)
  files.set(path, parseDeployFile(path, kind, text))
  return { files, localSecrets: tree.localSecrets, claimed: new Set() }
}

export function composeDoc (tree: DeployTree): Node {
  const file = tree.files.get('deploy/compose.yaml')
  if (file?.kind !== 'yaml') throw new Error('deploy/compose.yaml is missing')
  return structuredClone(file.docs[0]) as Node
}

export function cloneInput (input: KubernetesInput | null): KubernetesInput {
  if (input === null) throw new Error('kustomization.yaml is missing')
  return { kustomization: structuredClone(input.kustomization), manifests: new Map([...input.manifests].map(([k, v]) => [k, structuredClone(v)])) }
}

/** The manifest object of `kind` named `name`; throws if the base has none (the test is then stale). */
export function manifest (input: KubernetesInput, kind: string, name: string): Node {
  for (const docs of input.manifests.values()) {
    const found = docs.find((d) => d.kind === kind && d.metadata?.name === name)
    if (found !== undefined) return found
  }
  throw new Error(`no ${kind}/${name} in the base; update the drift test`)
}

export function container (input: KubernetesInput, kind: string, name: string): Node {
  return manifest(input, kind, name).spec.template.spec.containers[0]
}

export function envVar (c: Node, name: string): Node {
  const found = (c.env as Node[]).find((e) => e.name === name)
  if (found === undefined) throw new Error(`no ${name} in the container's env; update the drift test`)
  return found
}

/** Asserts the check reported a drift matching `pattern`, showing every line it did report. */
export function reports (t: Test, problems: Problems, pattern: RegExp, what: string): void {
  t.ok(problems.lines.some((line) => pattern.test(line)), what, { pattern: String(pattern), reported: problems.lines })
}
