/**
 * A small HAProxy configuration reader: sections (`global`, `defaults`, `frontend x`,
 * `backend x`, `listen x`, `resolvers x`) and their lines split into words, comments
 * removed. Enough to check binds, servers and health checks against compose.yaml.
 */
export interface HaproxyLine { words: string[], line: number }
export interface HaproxySection { kind: string, name: string | null, line: number, lines: HaproxyLine[] }

const SECTION_KINDS = new Set(['global', 'defaults', 'frontend', 'backend', 'listen', 'resolvers', 'peers', 'userlist', 'program', 'http-errors', 'cache', 'ring'])

export function parseHaproxy (text: string): HaproxySection[] {
  const sections: HaproxySection[] = []
  text.split('\n').forEach((raw, index) => {
    const content = raw.replace(/(^|\s)#.*$/, '').trimEnd()
    if (content.trim() === '') return
    const words = content.trim().split(/\s+/)
    if (!/^\s/.test(content)) {
      const kind = words[0] as string
      if (!SECTION_KINDS.has(kind)) throw new Error(`line ${index + 1}: "${kind}" is not a section keyword (indent the lines inside a section)`)
      sections.push({ kind, name: words[1] ?? null, line: index + 1, lines: [] })
      return
    }
    const current = sections[sections.length - 1]
    if (current === undefined) throw new Error(`line ${index + 1}: a setting outside any section`)
    current.lines.push({ words, line: index + 1 })
  })
  return sections
}

/** The port of a `bind` address (`:3000`, `127.0.0.1:8405`, `[::]:80`). */
export function bindPort (address: string): number | null {
  const match = /:(\d+)$/.exec(address)
  return match === null ? null : Number(match[1])
}
