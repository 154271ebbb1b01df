import { CommanderError } from 'commander'
import { ConfigError } from '../common/config.js'
import { CommonProblems, defineProblem, isPortierProblem, problemBody, type ProblemBody } from '../common/problem.js'
import { CommandFailed, EXIT_CONFIG, EXIT_FAILURE, EXIT_USAGE, UsageError } from './io.js'

/**
 * What went wrong in a `portier` command, once: its exit code, the line(s) people read
 * on stderr, and the same as a problem body (RFC 9457, as the HTTP APIs write them)
 * for `--format json`. Problems of identity's services keep their own code; the CLI's
 * own failures have these.
 */
export const CliProblems = {
  usageError: defineProblem('usage_error', 400, 'Invalid command line', '%s'),
  configurationInvalid: defineProblem('configuration_invalid', 500, 'Invalid configuration', '%s'),
  commandFailed: defineProblem('command_failed', 422, 'Command failed', '%s')
} as const

export interface Failure {
  exitCode: number
  /** As printed for people (newline-terminated); for a usage error of commander's, what it already wrote. */
  text: string
  problem: ProblemBody
}

/** `error: unknown option '--x'` → `unknown option '--x'`. */
const withoutPrefix = (message: string): string => message.replace(/^error: /, '')

/** What `err` (thrown by a command, or commander's refusal with `commanderText`, what it wrote) means for the operator. */
export function failureOf (err: unknown, commanderText: string): Failure {
  if (err instanceof CommanderError) {
    return { exitCode: EXIT_USAGE, text: commanderText, problem: problemBody(CliProblems.usageError([withoutPrefix(err.message)])) }
  }
  if (err instanceof CommandFailed) {
    return { exitCode: EXIT_FAILURE, text: `error: ${err.message}\n`, problem: problemBody(CliProblems.commandFailed([err.message])) }
  }
  if (err instanceof UsageError) {
    return { exitCode: EXIT_USAGE, text: `error: ${err.message}\n`, problem: problemBody(CliProblems.usageError([err.message])) }
  }
  if (err instanceof ConfigError) {
    const problem = CliProblems.configurationInvalid([err.problems.join('; ')], { extensions: { problems: err.problems } })
    return { exitCode: EXIT_CONFIG, text: `${err.message}\n`, problem: problemBody(problem) }
  }
  if (isPortierProblem(err)) {
    return { exitCode: EXIT_FAILURE, text: `error: ${err.code}: ${err.message}\n`, problem: problemBody(err) }
  }
  const message = `unexpected failure: ${err instanceof Error ? err.message : String(err)}`
  return { exitCode: EXIT_FAILURE, text: `error: ${message}\n`, problem: { ...problemBody(CommonProblems.internal()), detail: message } }
}
