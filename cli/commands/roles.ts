import { Option, type Command } from 'commander'
import { KeyLifetimeDays, Permissions, RoleName } from '../../identity/schemas.js'
import { roleView } from '../../identity/views.js'
import type { CliIo } from '../io.js'
import { identityAction } from '../identity-action.js'
import { checked, checkedArgument, parseList, parseWholeNumber, PERMISSIONS_HINT } from '../input.js'
import { policiesFrom, withPolicyOptions, type PolicyOptions } from '../policy-argument.js'

/** What `--key-max-lifetime-days` and `--no-key-max-lifetime-days` give: days, false for the default, undefined to keep it. */
interface LifetimeOptions { keyMaxLifetimeDays?: string | false }

const LIFETIME_OPTION = '--key-max-lifetime-days'

/** The role's self-service key lifetime the options set: days, null (the default), or undefined (unchanged). */
function lifetimeFrom (options: LifetimeOptions): number | null | undefined {
  if (options.keyMaxLifetimeDays === false) return null
  if (options.keyMaxLifetimeDays === undefined) return undefined
  return checked(KeyLifetimeDays, parseWholeNumber(options.keyMaxLifetimeDays, LIFETIME_OPTION), LIFETIME_OPTION)
}

/** `portier roles …`: the operations of /admin/roles. */
export function registerRoleCommands (program: Command, io: CliIo): void {
  const roles = program.command('roles').description('roles and the permissions they grant (resource:action, resource:*, *)')

  withPolicyOptions(roles.command('set'), true)
    .description('create a role or replace its permissions, and its traffic policies when --policy or --no-policies is given')
    .argument('<name>', 'role name (lower case, digits, - and _)')
    .requiredOption('--permissions <list>', 'comma-separated permissions, e.g. users:list,tasks:* (quote * in the shell)')
    .addOption(new Option(`${LIFETIME_OPTION} <days>`, 'the longest lifetime a holder may give a key they make themselves (1 to 3650 days; the largest of their roles\' applies)'))
    .addOption(new Option('--no-key-max-lifetime-days', 'holders get the configured default lifetime again (the last of the two options given counts)'))
    .action(identityAction<PolicyOptions & LifetimeOptions & { permissions: string }>(io, async ({ args, options, services }) => {
      const name = checkedArgument(RoleName, args[0], 'name')
      const permissions = checked(Permissions, parseList(options.permissions), '--permissions', PERMISSIONS_HINT)
      const policies = policiesFrom(options)
      const lifetime = lifetimeFrom(options)
      const s = await services()
      return { body: { role: roleView(await s.roles.set(name, permissions, policies, lifetime)) } }
    }))

  roles.command('list')
    .description('list roles')
    .action(identityAction(io, async ({ services }) => {
      const s = await services()
      return { body: { roles: s.roles.list().map(roleView) }, columns: { roles: ['name', 'permissions', 'updated_at'] } }
    }))

  roles.command('show')
    .description('show a role')
    .argument('<name>', 'role name')
    .action(identityAction(io, async ({ args, services }) => {
      const name = checkedArgument(RoleName, args[0], 'name')
      const s = await services()
      return { body: { role: roleView(s.roles.get(name)) } }
    }))

  roles.command('delete')
    .description('delete a role no user holds')
    .argument('<name>', 'role name')
    .action(identityAction(io, async ({ args, services }) => {
      const name = checkedArgument(RoleName, args[0], 'name')
      const s = await services()
      await s.roles.remove(name)
      // The admin route answers 204; a script still gets one JSON document.
      return { body: { deleted: { role: name } } }
    }))
}
