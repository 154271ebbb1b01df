import type { Command } from 'commander'
import type { TInteger } from 'typebox'
import { Id, SessionListLimit } from '../../identity/schemas.js'
import { sessionView } from '../../identity/views.js'
import type { CliIo } from '../io.js'
import { identityAction } from '../identity-action.js'
import { checked, checkedArgument, parseWholeNumber } from '../input.js'

// Typed view of the schema's own bounds, for the help text and the default.
const limits = SessionListLimit as TInteger & { maximum: number, default: number }
const SESSION_COLUMNS = ['id', 'user_id', 'status', 'ip_address', 'created_at', 'last_used_at', 'expires_at', 'revoked_reason']

/** `portier sessions …`: the operations of /admin/sessions and /admin/users/:id/sessions. */
export function registerSessionCommands (program: Command, io: CliIo): void {
  const sessions = program.command('sessions').description('list and revoke login sessions')

  sessions.command('list')
    .description("list sessions, newest first (all of one user's with --user)")
    .option('--user <id>', "only this user's sessions")
    .option('--limit <n>', `at most this many sessions (1 to ${limits.maximum}; default: ${limits.default}, or all with --user)`)
    .action(identityAction<{ user?: string, limit?: string }>(io, async ({ options, services }) => {
      const userId = options.user !== undefined ? checked(Id, options.user, '--user') : undefined
      const limit = options.limit !== undefined ? checked(SessionListLimit, parseWholeNumber(options.limit, '--limit'), '--limit') : undefined
      const s = await services()
      const now = s.clock.now()
      // As /admin/users/:id/sessions: an unknown user is an error, not an empty list.
      if (userId !== undefined) s.users.get(userId)
      const list = s.sessions.list({
        ...(userId !== undefined ? { userId } : {}),
        ...(limit !== undefined ? { limit } : userId === undefined ? { limit: limits.default } : {})
      })
      return { body: { sessions: list.map((session) => sessionView(session, now)) }, columns: { sessions: SESSION_COLUMNS } }
    }))

  sessions.command('show')
    .description('show a session')
    .argument('<id>', 'session id')
    .action(identityAction(io, async ({ args, services }) => {
      const id = checkedArgument(Id, args[0], 'id')
      const s = await services()
      return { body: { session: sessionView(s.sessions.get(id), s.clock.now()) } }
    }))

  sessions.command('revoke')
    .description('revoke a session: its refresh token stops working and gateways reject its access tokens')
    .argument('<id>', 'session id')
    .action(identityAction(io, async ({ args, services }) => {
      const id = checkedArgument(Id, args[0], 'id')
      const s = await services()
      return { body: { session: sessionView(await s.sessions.revoke(id, 'admin'), s.clock.now()) } }
    }))

  sessions.command('revoke-all')
    .description('revoke every live session of a user')
    .requiredOption('--user <id>', 'user id')
    .action(identityAction<{ user: string }>(io, async ({ options, services }) => {
      const userId = checked(Id, options.user, '--user')
      const s = await services()
      s.users.get(userId)
      return { body: { revoked: await s.sessions.revokeAllOfUser(userId, 'admin') } }
    }))
}
