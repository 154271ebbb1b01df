import type { ErrorObject, ValidateFunction } from 'ajv'
import { Writable } from 'node:stream'
import { createInterface } from 'node:readline'
import { Option, type Command } from 'commander'
import type { Static, TSchema } from 'typebox'
import { createAjv } from '../common/ajv.js'
import { Password } from '../identity/schemas.js'
import { UsageError, type CliIo } from './io.js'

/**
 * Parsing and validation of command-line input. The rules are the admin routes'
 * own schemas (identity/schemas.ts), checked with Ajv configured as the HTTP apps
 * configure it, so the CLI accepts exactly what the admin API accepts.
 */

// As the HTTP apps' body validator: no coercion.
const ajv = createAjv(false)
const compiled = new WeakMap<TSchema, ValidateFunction>()

function explain (error: ErrorObject, value: unknown): string {
  // Name the offending item of a list (`--permissions: "tasks:?" must match ...`); scalars are not echoed.
  const item = /^\/(\d+)$/.exec(error.instancePath)
  const itemValue = item !== null && Array.isArray(value) ? value[Number(item[1])] : undefined
  // Or the member of an object an option was made into (`--policy "…": limit must be <= 10000`).
  const member = /^\/([A-Za-z_]\w*)$/.exec(error.instancePath)?.[1]
  const prefix = typeof itemValue === 'string' ? `${JSON.stringify(itemValue)} ` : member !== undefined ? `${member} ` : ''
  // Ajv does not list an enum's values; the operator needs them.
  const allowed = (error.params as { allowedValues?: unknown }).allowedValues
  const message = error.keyword === 'enum' && Array.isArray(allowed) ? `must be one of ${allowed.join(', ')}` : error.message
  return `${prefix}${message ?? 'is invalid'}`
}

/**
 * Returns `value` if it satisfies `schema`; otherwise a UsageError naming `name` (an
 * option or argument), followed by `hint` when the schema's own message is cryptic.
 */
export function checked<T extends TSchema> (schema: T, value: unknown, name: string, hint?: string): Static<T> {
  let validate = compiled.get(schema)
  if (validate === undefined) {
    validate = ajv.compile(schema)
    compiled.set(schema, validate)
  }
  if (!validate(value)) {
    throw new UsageError(`${name}: ${explain((validate.errors ?? [])[0] as ErrorObject, value)}${hint !== undefined ? ` (${hint})` : ''}`)
  }
  return value as Static<T>
}

export const PERMISSIONS_HINT = 'each one resource:action, resource:* or *'
export const TIMESTAMP_HINT = 'an ISO 8601 time with a zone, e.g. 2027-01-31T00:00:00Z'

/** `a, b,,c` → `['a', 'b', 'c']`; an empty string is the empty list. */
export function parseList (text: string): string[] {
  return text.split(',').map((s) => s.trim()).filter((s) => s !== '')
}

const DURATION_UNITS_SECONDS: Record<string, number> = { s: 1, m: 60, h: 3_600, d: 86_400, w: 604_800 }

/** `90d`, `24h`, `30m`, `45s`, `2w` → seconds. The unit is required: a bare number is ambiguous. */
export function parseDurationSeconds (text: string, name: string): number {
  const match = /^(\d{1,9})([smhdw])$/.exec(text.trim())
  if (match === null) throw new UsageError(`${name}: "${text}" is not a duration; write a number and a unit, e.g. 45s, 30m, 24h, 90d or 2w`)
  return Number(match[1]) * (DURATION_UNITS_SECONDS[match[2] as string] as number)
}

/** A non-negative whole number, written in decimal. */
export function parseWholeNumber (text: string, name: string): number {
  if (!/^\d{1,15}$/.test(text.trim())) throw new UsageError(`${name}: "${text}" is not a whole number`)
  return Number(text)
}

/** A positional argument after the schema check, e.g. `checkedArgument(Id, id, 'id')`. */
export function checkedArgument<T extends TSchema> (schema: T, value: unknown, name: string): Static<T> {
  return checked(schema, value, `argument <${name}>`)
}

export interface PasswordOptions {
  password?: string
  passwordStdin?: boolean
}

/** Adds `--password-stdin` and `--password <password>` (mutually exclusive) to a command. */
export function withPasswordOptions (command: Command): Command {
  return command
    .addOption(new Option('--password-stdin', 'read the password from the first line of standard input (recommended)'))
    .addOption(new Option('--password <password>', 'the password itself (less safe: shell history and process listings keep it)')
      .conflicts('passwordStdin'))
}

/** Reads one line from a pipe or file; on a terminal, prompts on stderr without echoing what is typed. */
async function readSecretLine (io: CliIo, prompt: string): Promise<string | null> {
  const onTerminal = io.stdin.isTTY === true
  const silent = new Writable({ write (_chunk, _encoding, done) { done() } })
  const lines = createInterface({ input: io.stdin, output: onTerminal ? silent : undefined, terminal: onTerminal })
  if (onTerminal) io.stderr.write(prompt)
  try {
    return await new Promise<string | null>((resolve, reject) => {
      lines.once('line', (line) => resolve(line))
      lines.once('close', () => resolve(null))
      lines.once('SIGINT', () => reject(new UsageError('cancelled')))
    })
  } finally {
    lines.close()
    if (onTerminal) io.stderr.write('\n')
  }
}

/**
 * The password a command was given, checked against the admin API's rule
 * (8 to 128 characters). Its value never appears in a message.
 */
export async function passwordFrom (options: PasswordOptions, io: CliIo): Promise<string> {
  if (options.passwordStdin === true) {
    const line = await readSecretLine(io, 'Password: ')
    if (line === null || line === '') throw new UsageError('--password-stdin: no password on standard input (expected one line)')
    return checked(Password, line, '--password-stdin')
  }
  if (options.password === undefined) throw new UsageError('a password is required: pipe it into --password-stdin (or use --password)')
  return checked(Password, options.password, '--password')
}
