import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/** What registers clean-up: a tap Test. */
export interface Teardown { teardown: (fn: () => unknown) => void }

/** A new temporary folder, removed with everything in it when `t` ends. */
export function tempDir (t: Teardown, prefix = 'portier-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}
