import t from 'tap'
import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join, posix, relative } from 'node:path'
import { fileURLToPath } from 'node:url'

/**
 * The services share code only through common/: the gateway runs without identity's
 * code (and the other way round), and what they must agree on is declared once there
 * (permissions, the access-token profile, the internal API). No relative import of a
 * service's files reaches another service; common/ imports nothing outside itself.
 */

const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const SERVICES = ['gateway', 'identity', 'upstream-mock'] as const
const SHARED = 'common'
/** `from '…'`, `import '…'`, `import('…')` and `export … from '…'`. */
const SPECIFIER = /(?:\bfrom\s*|\bimport\s*\(?\s*)['"]([^'"]+)['"]/g

function sourceFiles (folder: string): string[] {
  return readdirSync(join(ROOT, folder), { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.ts'))
    .map((file) => posix.join(folder, file.split('\\').join('/')))
}

/** The top folder each relative import of `file` reaches. */
function importedFolders (file: string): Array<{ specifier: string, folder: string }> {
  const text = readFileSync(join(ROOT, file), 'utf8')
  return [...text.matchAll(SPECIFIER)]
    .map((match) => match[1] as string)
    .filter((specifier) => specifier.startsWith('.'))
    .map((specifier) => ({
      specifier,
      folder: relative(ROOT, join(ROOT, dirname(file), specifier)).split(/[\\/]/)[0] as string
    }))
}

t.test('no service imports another; common/ imports nothing outside itself', async (t) => {
  let checked = 0
  for (const folder of [SHARED, ...SERVICES]) {
    const refused = (reached: string): boolean => folder === SHARED
      ? reached !== SHARED
      : reached !== folder && (SERVICES as readonly string[]).includes(reached)
    const crossings: string[] = []
    for (const file of sourceFiles(folder)) {
      for (const { specifier, folder: reached } of importedFolders(file)) {
        checked++
        if (refused(reached)) crossings.push(`${file} imports ${specifier}`)
      }
    }
    t.same(crossings, [], folder === SHARED ? 'common/ imports only common/' : `${folder}/ imports no other service`)
  }
  t.ok(checked > 300, `every relative import was checked (${checked})`)
})
