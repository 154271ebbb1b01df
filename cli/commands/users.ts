import type { Command } from 'commander'
import { Type } from 'typebox'
import { Email, Id, MAX_ROLES_PER_USER, RoleName } from '../../identity/schemas.js'
import type { IdentityServices } from '../../identity/services/index.js'
import type { UserRecord } from '../../identity/store/users-store.js'
import { userView } from '../../identity/views.js'
import type { CliIo } from '../io.js'
import { identityAction } from '../identity-action.js'
import { checked, checkedArgument, parseList, passwordFrom, withPasswordOptions, type PasswordOptions } from '../input.js'

/** As the admin routes' `roles` member. */
const RoleNames = Type.Array(RoleName, { maxItems: MAX_ROLES_PER_USER })
const USER_COLUMNS = ['id', 'email', 'roles', 'status', 'created_at', 'disabled_at']

const answer = (services: IdentityServices, user: UserRecord) => ({ body: { user: userView(user, services.permissionsOf(user.id)) } })

/** `portier users …`: the operations of /admin/users. */
export function registerUserCommands (program: Command, io: CliIo): void {
  const users = program.command('users').description('create users, set their roles and passwords, disable or enable them')

  withPasswordOptions(users.command('create')
    .description('create a user')
    .requiredOption('--email <email>', 'e-mail address (the login name)')
    .option('--roles <names>', 'comma-separated role names; each must exist (default: none)'))
    .action(identityAction<PasswordOptions & { email: string, roles?: string }>(io, async ({ options, services }) => {
      const email = checked(Email, options.email, '--email')
      const roles = checked(RoleNames, parseList(options.roles ?? ''), '--roles')
      const password = await passwordFrom(options, io)
      const s = await services()
      return answer(s, await s.users.create({ email, password, roles }))
    }))

  users.command('list')
    .description('list users')
    .action(identityAction(io, async ({ services }) => {
      const s = await services()
      return { body: { users: s.users.list().map((u) => userView(u, s.permissionsOf(u.id))) }, columns: { users: USER_COLUMNS } }
    }))

  users.command('show')
    .description('show a user, with the permissions their roles grant')
    .argument('<id>', 'user id')
    .action(identityAction(io, async ({ args, services }) => {
      const id = checkedArgument(Id, args[0], 'id')
      const s = await services()
      return answer(s, s.users.get(id))
    }))

  users.command('set-roles')
    .description("replace a user's roles (an empty list removes all)")
    .argument('<id>', 'user id')
    .requiredOption('--roles <names>', 'comma-separated role names; each must exist')
    .action(identityAction<{ roles: string }>(io, async ({ args, options, services }) => {
      const id = checkedArgument(Id, args[0], 'id')
      const roles = checked(RoleNames, parseList(options.roles), '--roles')
      const s = await services()
      return answer(s, await s.users.setRoles(id, roles))
    }))

  withPasswordOptions(users.command('set-password')
    .description("change a user's password; ends all of the user's sessions")
    .argument('<id>', 'user id'))
    .action(identityAction<PasswordOptions>(io, async ({ args, options, services }) => {
      const id = checkedArgument(Id, args[0], 'id')
      const password = await passwordFrom(options, io)
      const s = await services()
      return answer(s, await s.users.changePassword(id, password))
    }))

  for (const [action, disabled] of [['disable', true], ['enable', false]] as const) {
    users.command(action)
      .description(disabled ? "disable a user; ends all of the user's sessions" : 'enable a disabled user')
      .argument('<id>', 'user id')
      .action(identityAction(io, async ({ args, services }) => {
        const id = checkedArgument(Id, args[0], 'id')
        const s = await services()
        return answer(s, await s.users.setDisabled(id, disabled))
      }))
  }
}
