import { existsSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

/**
 * The repository's root, found from this module upwards: tests run compiled from
 * dist/test/ (see .taprc), so a fixed number of `..` would land in dist/.
 */
function findRoot (from: string): string {
  let dir = from
  while (!existsSync(join(dir, 'package.json'))) {
    const parent = dirname(dir)
    if (parent === dir) throw new Error(`no package.json above ${from}`)
    dir = parent
  }
  return dir
}

export const REPO_ROOT = findRoot(dirname(fileURLToPath(import.meta.url)))

/** A path inside the repository, e.g. `repoPath('dist/gateway/server.js')`. */
export const repoPath = (...parts: string[]): string => join(REPO_ROOT, ...parts)
