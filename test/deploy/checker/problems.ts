/**
 * What a deploy check found: one line per drift, naming the file (relative to the
 * repository), the place inside it and what is wrong, so a failure says where to look.
 */
export class Problems {
  readonly lines: string[] = []

  add (file: string, where: string, message: string): void {
    this.lines.push(where === '' ? `${file}: ${message}` : `${file}: ${where}: ${message}`)
  }
}

/** A YAML/JSON value seen through a path: manifests are data, not typed objects. */
export type Node = Record<string, any>

export function isObject (value: unknown): value is Node {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

export function asArray (value: unknown): any[] {
  return Array.isArray(value) ? value : []
}

/** Names that hold a credential: never a literal value in a committed file. */
export const SECRET_NAME = /_(TOKEN|KEY|SECRET|PASSWORD)(_PREVIOUS)?$/
