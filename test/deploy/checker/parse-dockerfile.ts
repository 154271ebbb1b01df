/**
 * A small Dockerfile parser, enough to check what the image runs: instructions with
 * their flags and JSON (exec) form, grouped by stage. Line continuations and comment
 * lines inside them are handled as Docker does; anything it cannot read is an error.
 */
export interface Instruction {
  keyword: string
  /** 1-based line where the instruction starts. */
  line: number
  /** `--name=value` options before the arguments (COPY --from, HEALTHCHECK --interval…). */
  flags: Record<string, string>
  /** The arguments after the flags, as written (continuations joined). */
  args: string
  /** The arguments in exec form (`["node", "x.js"]`), or null in shell form. */
  exec: string[] | null
}

export interface Stage {
  name: string | null
  image: string
  line: number
  instructions: Instruction[]
}

export interface Dockerfile {
  stages: Stage[]
  /** Instructions before the first FROM (ARG only). */
  preamble: Instruction[]
}

const FLAGGED = new Set(['COPY', 'ADD', 'FROM', 'RUN', 'HEALTHCHECK'])

function parseExec (text: string): string[] | null {
  if (!text.startsWith('[')) return null
  try {
    const value: unknown = JSON.parse(text)
    return Array.isArray(value) && value.every((v) => typeof v === 'string') ? value : null
  } catch {
    return null
  }
}

function splitFlags (keyword: string, text: string): { flags: Record<string, string>, rest: string } {
  const flags: Record<string, string> = {}
  let rest = text
  if (!FLAGGED.has(keyword)) return { flags, rest }
  for (;;) {
    const match = /^--([a-z-]+)(?:=(\S*))?\s+/.exec(rest)
    if (match === null) break
    flags[match[1] as string] = match[2] ?? 'true'
    rest = rest.slice(match[0].length)
  }
  return { flags, rest }
}

/** Parses Dockerfile text; throws an Error naming the line on what it cannot read. */
export function parseDockerfile (text: string): Dockerfile {
  const lines = text.split('\n')
  if (lines.some((l) => /^#\s*escape\s*=/i.test(l))) throw new Error('an escape directive is not supported by this parser')
  const instructions: Instruction[] = []
  for (let i = 0; i < lines.length; i++) {
    const raw = lines[i] as string
    if (raw.trim() === '' || raw.trimStart().startsWith('#')) continue
    const start = i + 1
    let joined = raw
    while (joined.endsWith('\\')) {
      joined = joined.slice(0, -1)
      i++
      if (i >= lines.length) throw new Error(`line ${start}: the last line ends in a continuation`)
      const next = lines[i] as string
      // Docker drops comment lines inside a continued instruction.
      if (next.trimStart().startsWith('#')) {
        joined += '\\'
        continue
      }
      joined += ` ${next.trim()}`
    }
    const match = /^\s*([A-Za-z]+)\s+(.*)$/.exec(joined)
    if (match === null) throw new Error(`line ${start}: not an instruction: ${joined.trim()}`)
    const keyword = (match[1] as string).toUpperCase()
    const { flags, rest } = splitFlags(keyword, (match[2] as string).trim().replace(/\s+/g, ' '))
    let exec = parseExec(rest)
    if (keyword === 'HEALTHCHECK' && rest.startsWith('CMD ')) exec = parseExec(rest.slice(4).trim())
    instructions.push({ keyword, line: start, flags, args: rest, exec })
  }
  const preamble: Instruction[] = []
  const stages: Stage[] = []
  for (const instruction of instructions) {
    if (instruction.keyword === 'FROM') {
      const from = /^(\S+)(?:\s+AS\s+(\S+))?$/i.exec(instruction.args)
      if (from === null) throw new Error(`line ${instruction.line}: FROM ${instruction.args}: expected "image [AS name]"`)
      stages.push({ image: from[1] as string, name: from[2] ?? null, line: instruction.line, instructions: [] })
    } else if (stages.length === 0) {
      if (instruction.keyword !== 'ARG') throw new Error(`line ${instruction.line}: ${instruction.keyword} before the first FROM`)
      preamble.push(instruction)
    } else {
      (stages[stages.length - 1] as Stage).instructions.push(instruction)
    }
  }
  return { stages, preamble }
}

/** COPY/ADD arguments: sources and the destination, exec or shell form. */
export function copyArgs (instruction: Instruction): { sources: string[], dest: string } {
  const parts = instruction.exec ?? instruction.args.split(' ')
  return { sources: parts.slice(0, -1), dest: parts[parts.length - 1] ?? '' }
}
