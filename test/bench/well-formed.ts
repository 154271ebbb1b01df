/**
 * A small XML well-formedness check for the SVG chart (no XML parser is installed and
 * none is worth adding for this): one root element, every tag closed in order,
 * attributes quoted and unique, and `<` or `&` never raw in text or attribute values.
 * Comments, processing instructions and CDATA are refused: the chart has none.
 * Returns the problems found; an empty list means well-formed.
 */

const NAME = '[A-Za-z_][\\w.:-]*'
const ENTITY = /&(?:amp|lt|gt|quot|apos|#\d+|#x[0-9a-fA-F]+);/g
const TAG = new RegExp(`^<(/?)(${NAME})((?:\\s+${NAME}\\s*=\\s*(?:"[^"]*"|'[^']*'))*)\\s*(/?)>`)
const ATTRIBUTE = new RegExp(`(${NAME})\\s*=\\s*(?:"([^"]*)"|'([^']*)')`, 'g')

function checkText (text: string, where: string, problems: string[]): void {
  const rest = text.replace(ENTITY, '')
  if (rest.includes('&')) problems.push(`raw or unknown & in ${where}`)
  if (rest.includes('<')) problems.push(`raw < in ${where}`)
}

export function xmlProblems (document: string): string[] {
  const problems: string[] = []
  const open: string[] = []
  let roots = 0
  let position = 0
  while (position < document.length) {
    const next = document.indexOf('<', position)
    const text = document.slice(position, next === -1 ? document.length : next)
    if (open.length === 0 && text.trim() !== '') problems.push(`text outside the root element at ${position}`)
    checkText(text, `text at ${position}`, problems)
    if (next === -1) break
    const match = TAG.exec(document.slice(next))
    if (match === null) {
      problems.push(`malformed tag at ${next}: ${document.slice(next, next + 40)}`)
      break
    }
    const [whole, closing, name, attributes, selfClosing] = match as unknown as [string, string, string, string, string]
    if (closing === '/') {
      if (attributes !== '' || selfClosing !== '') problems.push(`closing tag </${name}> with attributes at ${next}`)
      const expected = open.pop()
      if (expected !== name) problems.push(`</${name}> at ${next} closes <${expected ?? 'nothing'}>`)
    } else {
      if (open.length === 0) roots++
      const seen = new Set<string>()
      for (const attribute of attributes.matchAll(ATTRIBUTE)) {
        const attributeName = attribute[1] as string
        if (seen.has(attributeName)) problems.push(`attribute ${attributeName} twice on <${name}> at ${next}`)
        seen.add(attributeName)
        checkText(attribute[2] ?? attribute[3] ?? '', `attribute ${attributeName} of <${name}> at ${next}`, problems)
      }
      if (selfClosing !== '/') open.push(name)
    }
    position = next + whole.length
  }
  if (open.length > 0) problems.push(`unclosed: ${open.join(' > ')}`)
  if (roots !== 1) problems.push(`${roots} root elements`)
  return problems
}
