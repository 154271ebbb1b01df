import { Command, CommanderError, Option } from 'commander'
import { portierVersion } from '../common/openapi.js'
import { registerAuditCommands } from './commands/audit.js'
import { registerConfigCommands } from './commands/config.js'
import { registerKeyCommands } from './commands/keys.js'
import { registerRoleCommands } from './commands/roles.js'
import { registerSessionCommands } from './commands/sessions.js'
import { registerSigningKeyCommands } from './commands/signing-keys.js'
import { registerUserCommands } from './commands/users.js'
import { EXIT_OK, type CliIo } from './io.js'
import { formatProblem, OUTPUT_FORMATS } from './output.js'
import { failureOf } from './problems.js'

/**
 * The `portier` program, one command group per file of commands/, named as the
 * command. Settings made here before the groups register (output streams, error
 * handling) are inherited by every subcommand.
 */
export function createPortierProgram (io: CliIo, writeErr: (text: string) => void = (text) => io.stderr.write(text)): Command {
  const program = new Command('portier')
    .description('Operate Portier: identity users, roles, API keys, sessions and signing keys; check gateway config.\n' +
      'Identity commands work directly on IDENTITY_DATABASE_PATH, which must exist (the CLI never creates it). Their changes reach ' +
      'running gateways within a second through the identity server, and directly on REDIS_URL (or REDIS_CLUSTER_NODES) when set.\n' +
      '`config check <file>` reads only the upstreams file and needs no environment.')
    .version(portierVersion(), '-V, --version', 'print the Portier version')
    .addOption(new Option('--format <format>', 'output format; with json given, errors are one problem+json line on stderr').choices(OUTPUT_FORMATS).default('json'))
    .configureOutput({
      writeOut: (text) => io.stdout.write(text),
      writeErr
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

/**
 * Runs one command line (without `node` and the script) and returns the exit code.
 * What went wrong goes to stderr as a line for people or, when `--format json` was
 * given, as one problem+json line; commander's own messages are held until then, so
 * that only one of the two is written.
 */
export async function runPortier (argv: readonly string[], io: CliIo): Promise<number> {
  let commanderText = ''
  const program = createPortierProgram(io, (text) => { commanderText += text })
  try {
    await program.parseAsync([...argv], { from: 'user' })
    io.stderr.write(commanderText)
    return EXIT_OK
  } catch (err) {
    // Help and --version end as commander errors with exit code 0.
    if (err instanceof CommanderError && err.exitCode === 0) {
      io.stderr.write(commanderText)
      return EXIT_OK
    }
    const failure = failureOf(err, commanderText)
    // Asked for, not the default: people at a terminal keep the plain line.
    const asJson = program.getOptionValueSource('format') === 'cli' && program.opts<{ format: string }>().format === 'json'
    io.stderr.write(asJson ? formatProblem(failure.problem) : failure.text)
    return failure.exitCode
  }
}
