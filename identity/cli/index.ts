import type { Command } from 'commander'
import type { CliIo } from '../../cli/io.js'
import { registerKeyCommands } from './keys.js'
import { registerRoleCommands } from './roles.js'
import { registerSessionCommands } from './sessions.js'
import { registerSigningKeyCommands } from './signing-keys.js'
import { registerUserCommands } from './users.js'

/**
 * Identity's command groups: the admin API's operations, run directly on the
 * database named by IDENTITY_DATABASE_PATH, through the same services.
 */
export function registerIdentityCommands (program: Command, io: CliIo): void {
  registerUserCommands(program, io)
  registerRoleCommands(program, io)
  registerKeyCommands(program, io)
  registerSessionCommands(program, io)
  registerSigningKeyCommands(program, io)
}
