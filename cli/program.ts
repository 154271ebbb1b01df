import { Command, CommanderError, Option } from 'commander'
import { ConfigError } from '../common/config.js'
import { isPortierProblem } from '../common/problem.js'
import { registerGatewayCommands } from '../gateway/cli.js'
import { registerIdentityCommands } from '../identity/cli/index.js'
import { EXIT_CONFIG, EXIT_FAILURE, EXIT_OK, EXIT_USAGE, UsageError, type CliIo } from './io.js'
import { OUTPUT_FORMATS } from './output.js'

/**
 * The `portier` program. Command groups register themselves on it (identity's and
 * the gateway's `config` group later); settings made here before they register
 * (output streams, error handling) are inherited by every subcommand.
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
  registerIdentityCommands(program, io)
  registerGatewayCommands(program, io)
  return program
}

/** Writes what went wrong as one line on stderr and returns the exit code. */
function reportFailure (err: unknown, io: CliIo): number {
  // Commander has already printed its message (or the help that was asked for).
  if (err instanceof CommanderError) return err.exitCode === 0 ? EXIT_OK : EXIT_USAGE
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
