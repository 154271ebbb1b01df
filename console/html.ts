/**
 * HTML by tagged template: every interpolated value is escaped unless it is already
 * Html (made by this tag), so a page cannot forget to escape. A dozen lines instead of
 * a template engine: the console's pages are few and small, and the types then check
 * what each page is given.
 */
export class Html {
  constructor (readonly text: string) {}
  toString (): string { return this.text }
}

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }

export function escapeHtml (value: string): string {
  return value.replace(/[&<>"']/g, (c) => ESCAPES[c] ?? c)
}

type Part = Html | string | number | null | undefined | false | readonly Part[]

function render (part: Part): string {
  if (part === null || part === undefined || part === false) return ''
  if (part instanceof Html) return part.text
  if (Array.isArray(part)) return part.map(render).join('')
  return escapeHtml(String(part))
}

export function html (strings: TemplateStringsArray, ...values: Part[]): Html {
  let out = strings[0] ?? ''
  values.forEach((value, i) => { out += render(value) + (strings[i + 1] ?? '') })
  return new Html(out)
}
