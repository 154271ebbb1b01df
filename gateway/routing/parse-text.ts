import { isAlias, isNode, LineCounter, parseDocument, visit, type Document, type DocumentOptions, type ParseOptions, type SchemaOptions } from 'yaml'

export type ConfigFormat = 'yaml' | 'json'

export type ParsedText = { ok: true, value: unknown } | { ok: false, problems: string[] }

/*
 * The file is data, nothing more. YAML's richer features are refused rather than
 * interpreted: an alias or anchor (a value defined in one place and used in another,
 * and the way to blow up memory), an explicit tag (`!!binary`, `!custom`) and a
 * `%YAML`/`%TAG` directive (1.1 turns merge keys and `yes`/`no` booleans on). Merge
 * keys stay off, so `<<` is an ordinary member and the schema calls it unknown.
 */
const YAML_OPTIONS: ParseOptions & DocumentOptions & SchemaOptions = {
  version: '1.2',
  schema: 'core',
  merge: false,
  uniqueKeys: true,
  strict: true,
  prettyErrors: false,
  customTags: []
}

function at (source: string, lines: LineCounter, offset: number): string {
  const { line, col } = lines.linePos(offset)
  return `${source}: line ${line}, column ${col}`
}

function refusedFeatures (doc: Document, source: string, lines: LineCounter): string[] {
  const problems: string[] = []
  const directives = doc.directives
  if (directives !== undefined && (directives.yaml.explicit === true || Object.keys(directives.tags).length > 1)) {
    problems.push(`${source}: YAML directives (%YAML, %TAG) are not supported`)
  }
  visit(doc, {
    Node (_key, node) {
      const offset = node.range?.[0] ?? 0
      if (isAlias(node)) problems.push(`${at(source, lines, offset)}: YAML aliases (*${node.source}) are not supported; write the value out`)
      else if (isNode(node)) {
        if (node.anchor !== undefined) problems.push(`${at(source, lines, offset)}: YAML anchors (&${node.anchor}) are not supported; write the value out`)
        if (node.tag !== undefined) problems.push(`${at(source, lines, offset)}: YAML tags (${node.tag}) are not supported`)
      }
    }
  })
  return problems
}

function parseYaml (text: string, source: string): ParsedText {
  const lines = new LineCounter()
  const doc = parseDocument(text, { ...YAML_OPTIONS, lineCounter: lines })
  // Warnings too: an unresolved tag is only a warning to the library.
  const syntax = [...doc.errors, ...doc.warnings].map((e) => `${at(source, lines, e.pos[0])}: ${e.message}`)
  if (syntax.length > 0) return { ok: false, problems: syntax }
  const refused = refusedFeatures(doc, source, lines)
  if (refused.length > 0) return { ok: false, problems: refused }
  return { ok: true, value: doc.toJS() }
}

function jsonAt (source: string, text: string, offset: number): string {
  const before = text.slice(0, offset).split('\n')
  return `${source}: line ${before.length}, column ${(before.at(-1)?.length ?? 0) + 1}`
}

const JSON_WHITESPACE = new Set([' ', '\t', '\n', '\r'])

/**
 * Offsets of member names repeated within one object. JSON.parse keeps the last of
 * two equal names without a word, so a text it accepted is scanned once more.
 */
function duplicateKeys (text: string): Array<{ name: string, offset: number }> {
  const found: Array<{ name: string, offset: number }> = []
  // One set of names per open object; null for an open array.
  const open: Array<Set<string> | null> = []
  for (let i = 0; i < text.length; i++) {
    const c = text[i]
    if (c === '{') open.push(new Set())
    else if (c === '[') open.push(null)
    else if (c === '}' || c === ']') open.pop()
    else if (c === '"') {
      let end = i + 1
      while (text[end] !== '"') end += text[end] === '\\' ? 2 : 1
      let next = end + 1
      while (JSON_WHITESPACE.has(text[next] ?? '')) next++
      const names = open.at(-1)
      if (text[next] === ':' && names !== null && names !== undefined) {
        const name = JSON.parse(text.slice(i, end + 1)) as string
        if (names.has(name)) found.push({ name, offset: i })
        names.add(name)
      }
      i = end
    }
  }
  return found
}

function parseJson (text: string, source: string): ParsedText {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err)
    // V8 says "… at position 17" for most errors, not all.
    const position = /position (\d+)/.exec(message)
    return { ok: false, problems: [`${position === null ? source : jsonAt(source, text, Number(position[1]))}: invalid JSON: ${message}`] }
  }
  const duplicates = duplicateKeys(text)
  if (duplicates.length === 0) return { ok: true, value }
  return { ok: false, problems: duplicates.map(({ name, offset }) => `${jsonAt(source, text, offset)}: ${JSON.stringify(name)} appears twice in the same object`) }
}

/** Turns the file's text into plain data; syntax problems name the file, line and column. */
export function parseConfigText (text: string, source: string, format: ConfigFormat): ParsedText {
  // A byte-order mark is how some editors save UTF-8; it is not content.
  const content = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text
  return format === 'json' ? parseJson(content, source) : parseYaml(content, source)
}
