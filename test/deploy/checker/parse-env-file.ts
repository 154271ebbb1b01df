/**
 * A dotenv-style file as docker compose and kustomize's secretGenerator read it:
 * `NAME=value` lines, `#` comment lines and blank lines, nothing else.
 */
export interface EnvFileEntry { name: string, value: string, line: number }

export function parseEnvFile (text: string): EnvFileEntry[] {
  const entries: EnvFileEntry[] = []
  text.split('\n').forEach((raw, index) => {
    const line = raw.trim()
    if (line === '' || line.startsWith('#')) return
    const match = /^([A-Za-z_][A-Za-z0-9_]*)=(.*)$/.exec(line)
    if (match === null) throw new Error(`line ${index + 1}: expected NAME=value`)
    if (entries.some((e) => e.name === match[1])) throw new Error(`line ${index + 1}: ${match[1] as string} is set twice`)
    entries.push({ name: match[1] as string, value: match[2] as string, line: index + 1 })
  })
  return entries
}
