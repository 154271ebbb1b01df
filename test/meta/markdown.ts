/**
 * Just enough Markdown for the meta-tests: headings, sections, tables and links of the
 * repository's documents, outside fenced code blocks, and heading anchors as GitHub
 * makes them.
 */

export interface MarkdownLine {
  /** 1-based, for messages. */
  number: number
  text: string
}

/** The lines that are Markdown, not code: fenced blocks (``` or ~~~) are left out. */
export function proseLines (markdown: string): MarkdownLine[] {
  const lines: MarkdownLine[] = []
  let fence: string | null = null
  markdown.split('\n').forEach((text, i) => {
    const marker = /^ {0,3}(`{3,}|~{3,})/.exec(text)?.[1]
    if (marker !== undefined && (fence === null || (marker[0] === fence[0] && marker.length >= fence.length))) {
      fence = fence === null ? marker : null
      return
    }
    if (fence === null) lines.push({ number: i + 1, text })
  })
  return lines
}

const HEADING = /^ {0,3}(#{1,6})\s+(.*?)(?:\s+#+)?\s*$/

/** The text of each heading (ATX style, the only one the documents use). */
export function headings (markdown: string): string[] {
  return proseLines(markdown).flatMap((line) => {
    const match = HEADING.exec(line.text)
    return match === null ? [] : [match[2] as string]
  })
}

/** The lines under the heading whose text is `heading` (any level), up to the next heading. */
export function section (markdown: string, heading: string): string {
  const lines = proseLines(markdown)
  const start = lines.findIndex((line) => HEADING.exec(line.text)?.[2] === heading)
  if (start === -1) return ''
  const end = lines.findIndex((line, i) => i > start && HEADING.test(line.text))
  return lines.slice(start, end === -1 ? undefined : end).map((line) => line.text).join('\n')
}

/** Table rows whose first cell is one code span matching `firstCell`: name → the other cells. */
export function tableRows (text: string, firstCell: RegExp): Map<string, string[]> {
  const rows = new Map<string, string[]>()
  for (const line of text.split('\n')) {
    const cells = line.split('|').slice(1, -1).map((c) => c.trim())
    const name = /^`([^`]+)`$/.exec(cells[0] ?? '')?.[1]
    if (name !== undefined && firstCell.test(name)) rows.set(name, cells.slice(1))
  }
  return rows
}

/** Heading text as rendered: code spans, emphasis and links reduced to their text. */
function renderedText (heading: string): string {
  return heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/`([^`]*)`/g, '$1')
    .replace(/(\*{1,3}|_{1,3})(\S(?:.*?\S)?)\1/g, '$2')
    .replace(/<[^>]+>/g, '')
}

/**
 * The anchors GitHub gives a document's headings: the rendered text lower-cased,
 * everything but letters, digits, `_`, `-` and spaces removed, spaces made `-`; a
 * repeated anchor gets `-1`, `-2`…
 */
export function anchors (markdown: string): Set<string> {
  const seen = new Map<string, number>()
  const out = new Set<string>()
  for (const heading of headings(markdown)) {
    const base = renderedText(heading).toLowerCase().replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '').replace(/ /g, '-')
    const count = seen.get(base) ?? 0
    seen.set(base, count + 1)
    out.add(count === 0 ? base : `${base}-${count}`)
  }
  return out
}

export interface MarkdownLink {
  line: number
  target: string
}

/** Inline links and images (`[text](target)`), outside code blocks and code spans. */
export function links (markdown: string): MarkdownLink[] {
  return proseLines(markdown).flatMap((line) => {
    const text = line.text.replace(/`+[^`]*`+/g, '')
    return [...text.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => ({ line: line.number, target: m[1] as string }))
  })
}
