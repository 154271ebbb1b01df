/**
 * What a `portier` command may touch: its three streams and the environment. The
 * entry point passes the process's own; nothing below it reads `process.*`.
 */
export interface CliIo {
  stdin: NodeJS.ReadableStream & { isTTY?: boolean }
  stdout: NodeJS.WritableStream
  stderr: NodeJS.WritableStream
  env: Record<string, string | undefined>
}

/** Exit codes: 0 success, 1 the operation was refused, 2 bad usage, 78 bad configuration (EX_CONFIG, as the servers). */
export const EXIT_OK = 0
export const EXIT_FAILURE = 1
export const EXIT_USAGE = 2
export const EXIT_CONFIG = 78

/**
 * A bad option or argument, found before anything was touched. The message starts
 * with the option's name (`--email: must match format "email"`) and never carries
 * the value of a secret option.
 */
export class UsageError extends Error {
  constructor (message: string) {
    super(message)
    this.name = 'UsageError'
  }
}

/** A command whose answer (printed) reports a failure: exit 1 with this line on stderr. */
export class CommandFailed extends Error {
  constructor (message: string) {
    super(message)
    this.name = 'CommandFailed'
  }
}

/** One warning line on stderr; stdout stays machine-readable. */
export function warn (io: Pick<CliIo, 'stderr'>, message: string): void {
  io.stderr.write(`warning: ${message}\n`)
}
