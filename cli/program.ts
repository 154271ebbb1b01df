import { Command, CommanderError, Option } from 'commander'
import { ConfigError } from '../common/config.js'
import { isPortierProblem } from '../common/problem.js'
import { registerAuditCommands } from './commands/audit.js'
import { registerConfigCommands } from './commands/config.js'
import { registerKeyCommands } from './commands/keys.js'
import { registerRoleCommands } from './commands/roles.js'
import { registerSessionCommands } from './commands/sessions.js'
import { registerSigningKeyCommands } from './commands/signing-keys.js'
import { registerUserCommands } from './commands/users.js'
import { CommandFailed, EXIT_CONFIG, EXIT_FAILURE, EXIT_OK, EXIT_USAGE, UsageError, type CliIo } from './io.js'
import { OUTPUT_FORMATS } from './output.js'

/**
 * The `portier` program, one command group per file of commands/, named as the
 * command. Settings made here before the groups register (output streams, error
 * handling) are inherited by every subcommand.
 */
export function createPortierProgram (io: CliIo): Command {
  const program = new Command('portier')
    .description('Operate Portier: identity users, roles, API keys, sessions and signing keys; check gateway config.\n' +
      'Identity commands work directly on IDENTITY_DATABASE_PATH, which must exist (the CLI never creates it). Their changes reach ' +
      'running gateways within a second through the identity server, and directly on REDIS_URL (or REDIS_CLUSTER_NODES) when set.\n' +
      '`config check <file>` reads only the upstreams file and needs no environment.')
    .addOption(new Option('--format <format>', 'output format').choices(OUTPUT_FORMATS).default('json'))
    .configureOutput({
      writeOut: (text) => io.stdout.write(text),
      writeErr: (text) => io.stderr.write(text)
    })
    // Commander's own usage errors are thrown to runPortier, which chooses the exit code.
    .exitOverride()
    .configureHelp({ showGlobalOptions: true })
    .showHelpAfterError('(add --help for usage)')
    .showSuggestionAfterError()
  // Identity's groups: the admin API's operations, run directly on the database named by
  // IDENTITY_DATABASE_PATH, through the same services and views.
  registerUserCommands(program, io)
  registerRoleCommands(program, io)
  registerKeyCommands(program, io)
  registerSessionCommands(program, io)
  registerSigningKeyCommands(program, io)
  registerAuditCommands(program, io)
  // The gateway's: its upstreams file.
  registerConfigCommands(program, io)
  return program
}

/** Writes what went wrong as one line on stderr and returns the exit code. */
function reportFailure (err: unknown, io: CliIo): number {
  // Commander has already printed its message (or the help that was asked for).
  if (err instanceof CommanderError) return err.exitCode === 0 ? EXIT_OK : EXIT_USAGE
  if (err instanceof CommandFailed) {
    io.stderr.write(`error: ${err.message}\n`)
    return EXIT_FAILURE
  }
  if (err instanceof UsageError) {
    io.stderr.write(`error: ${err.message}\n`)
    return EXIT_USAGE
  }
  if (err instanceof ConfigError) {
    io.stderr.write(`${err.message}\n`)
    return EXIT_CONFIG
  }
  if (isPortierProblem(err)) {
    io.stderr.write(`error: ${err.code}: ${err.message}\n`)
    return EXIT_FAILURE
  }
  io.stderr.write(`error: unexpected failure: ${err instanceof Error ? err.message : String(err)}\n`)
  return EXIT_FAILURE
}

/** Runs one command line (without `node` and the script) and returns the exit code. */
export async function runPortier (argv: readonly string[], io: CliIo): Promise<number> {
  try {
    await createPortierProgram(io).parseAsync([...argv], { from: 'user' })
    return EXIT_OK
  } catch (err) {
    return reportFailure(err, io)
  }
}
