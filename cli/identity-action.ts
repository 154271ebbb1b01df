import type { Command } from 'commander'
import { openIdentityDirectly, type DirectIdentity } from '../identity/direct-access.js'
import { cliContext, runAs } from '../identity/services/audit-context.js'
import type { IdentityServices } from '../identity/services/index.js'
import { CommandFailed, warn, type CliIo } from './io.js'
import { formatAnswer, type Answer, type OutputFormat } from './output.js'

/** What an identity command's body receives. */
export interface CommandRun<O> {
  /** Positional arguments, in order. */
  args: string[]
  options: O
  io: CliIo
  /**
   * Opens the configuration, the database, Redis and the services: called after the
   * input has been checked, so bad usage touches nothing.
   */
  services: () => Promise<IdentityServices>
}

export type CommandBody<O> = (run: CommandRun<O>) => Promise<Answer>

/**
 * Turns a command body into a commander action: the body checks its input, opens the
 * services when it needs them, and returns the answer, printed in the chosen format.
 * Whatever happens, the database and Redis are closed so that the process can exit.
 * The body runs as the CLI's audit actor (the OS user): what it changes records that.
 */
export function identityAction<O> (io: CliIo, body: CommandBody<O>): (...args: unknown[]) => Promise<void> {
  return async (...actionArgs) => {
    const command = actionArgs[actionArgs.length - 1] as Command
    const { format } = command.optsWithGlobals<{ format: OutputFormat }>()
    let opened: DirectIdentity | null = null
    try {
      const answer = await runAs(cliContext(), async () => await body({
        args: command.processedArgs as string[],
        options: command.opts() as O,
        io,
        services: async () => {
          // What identity has to tell the operator (Redis unreachable, changes not relayed) goes to stderr.
          opened ??= await openIdentityDirectly(io.env, (message) => warn(io, message))
          return opened.services
        }
      }))
      io.stdout.write(formatAnswer(answer, format))
      if (answer.failure !== undefined) throw new CommandFailed(answer.failure)
    } finally {
      // `opened` is assigned inside the callback above, which TypeScript cannot follow.
      await (opened as DirectIdentity | null)?.close()
    }
  }
}
