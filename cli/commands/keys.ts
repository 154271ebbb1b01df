import { Option, type Command } from 'commander'
import type { Static } from 'typebox'
import { GraceSeconds, Id, KeyListDays, KeyListStatusSchema, KeyName, Permissions, Timestamp, type KeyListQuery } from '../../identity/schemas.js'
import type { CreatedKey } from '../../identity/services/api-keys.js'
import type { IdentityServices } from '../../identity/services/index.js'
import { keyListCriteriaOf } from '../../identity/services/key-list.js'
import { KEY_LIST_STATUSES } from '../../identity/store/key-list-filter.js'
import { apiKeyView } from '../../identity/views.js'
import { warn, UsageError, type CliIo } from '../io.js'
import type { Answer } from '../output.js'
import { identityAction } from '../identity-action.js'
import { checked, checkedArgument, parseDurationSeconds, parseList, parseWholeNumber, PERMISSIONS_HINT, TIMESTAMP_HINT } from '../input.js'
import { policiesFrom, withPolicyOptions, type PolicyOptions } from '../policy-argument.js'

const KEY_COLUMNS = ['id', 'name', 'key_prefix', 'status', 'permissions', 'expires_at', 'last_used_at']

interface ExpiryOptions {
  expiresAt?: string
  expiresIn?: string
  /** false when `--no-expiry` was given (commander's negated option). */
  expiry?: boolean
}

/** The expiry asked for, as a function of "now"; undefined when none of the options was given. */
function expiryFrom (options: ExpiryOptions): ((now: number) => number | null) | undefined {
  if (options.expiresAt !== undefined) {
    const at = Date.parse(checked(Timestamp, options.expiresAt, '--expires-at', TIMESTAMP_HINT))
    return () => at
  }
  if (options.expiresIn !== undefined) {
    const seconds = parseDurationSeconds(options.expiresIn, '--expires-in')
    return (now) => now + seconds * 1000
  }
  if (options.expiry === false) return () => null
  return undefined
}

function addExpiryOptions (command: Command): Command {
  return command
    .addOption(new Option('--expires-at <time>', 'expiry as an ISO 8601 time with a zone, e.g. 2027-01-31T00:00:00Z').conflicts('expiresIn'))
    .addOption(new Option('--expires-in <duration>', 'expiry from now, e.g. 90d, 12w or 24h'))
}

interface ListOptions {
  owner?: string
  status?: string
  expiring?: string
  idle?: string
  neverExpires?: boolean
}

/** `7d` or `7`: a number of days (the key hygiene filters count in days). */
function parseDays (text: string, name: string): number {
  const match = /^(\d{1,9})d?$/.exec(text.trim())
  if (match === null) throw new UsageError(`${name}: "${text}" is not a number of days; write e.g. 7d or 7`)
  return checked(KeyListDays, Number(match[1]), name)
}

/** The options as the admin API's query (GET /admin/keys), each checked against the same schema. */
function listQueryFrom (options: ListOptions): Static<typeof KeyListQuery> {
  return {
    ...(options.owner !== undefined ? { owner: checked(Id, options.owner, '--owner') } : {}),
    ...(options.status !== undefined ? { status: checked(KeyListStatusSchema, options.status, '--status') } : {}),
    ...(options.expiring !== undefined ? { expiring_within_days: parseDays(options.expiring, '--expiring') } : {}),
    ...(options.idle !== undefined ? { idle_days: parseDays(options.idle, '--idle') } : {}),
    ...(options.neverExpires === true ? { never_expires: true } : {})
  }
}

function view (services: IdentityServices, id: string) {
  return apiKeyView(services.apiKeys.get(id), services.apiKeys.secretsOf(id), services.clock.now())
}

/** As the admin API: the full key appears here and never again; warnings also go to stderr. */
function createdAnswer (services: IdentityServices, io: CliIo, result: CreatedKey): Answer {
  for (const warning of result.warnings) warn(io, warning)
  warn(io, 'the full key is shown only this once: store it now in a secret manager')
  return { body: { api_key: view(services, result.key.id), key: result.secret, warnings: result.warnings } }
}

/** `portier keys …`: the API key lifecycle of /admin/keys. */
export function registerKeyCommands (program: Command, io: CliIo): void {
  const keys = program.command('keys').description('API keys: create, list, update, disable, revoke, rotate')

  withPolicyOptions(addExpiryOptions(keys.command('create')), false)
    .description('create an API key; the full key is printed once')
    .requiredOption('--name <name>', 'a unique name, e.g. the client it is for')
    .requiredOption('--permissions <list>', 'comma-separated permissions, e.g. users:list,tasks:*')
    .option('--owner <user-id>', "the user the key belongs to: it shares the user's per-user policies and gets their roles' policies")
    .action(identityAction<ExpiryOptions & PolicyOptions & { name: string, permissions: string, owner?: string }>(io, async ({ options, services }) => {
      const name = checked(KeyName, options.name, '--name')
      const permissions = checked(Permissions, parseList(options.permissions), '--permissions', PERMISSIONS_HINT)
      const policies = policiesFrom(options) ?? []
      const ownerUserId = options.owner !== undefined ? checked(Id, options.owner, '--owner') : null
      const expiry = expiryFrom(options)
      const s = await services()
      return createdAnswer(s, io, await s.apiKeys.create({ name, permissions, policies, ownerUserId, expiresAt: expiry?.(s.clock.now()) ?? null, origin: 'cli' }))
    }))

  keys.command('list')
    .description('list API keys (never their secrets), with last use and rotation state; the filters given must all match')
    .option('--owner <user-id>', 'keys of this user')
    .option('--status <status>', `keys in this state: ${KEY_LIST_STATUSES.join(', ')} (rotating: an old secret still in its grace period)`)
    .option('--expiring <days>', 'expiring within this many days, not yet expired, e.g. 7d')
    .option('--idle <days>', 'not used for this many days (never used: created longer ago), e.g. 90d')
    .option('--never-expires', 'keys without an expiry')
    .action(identityAction<ListOptions>(io, async ({ options, services }) => {
      const criteria = keyListCriteriaOf(listQueryFrom(options))
      const s = await services()
      return { body: { api_keys: s.apiKeys.list(criteria).map((k) => view(s, k.id)) }, columns: { api_keys: KEY_COLUMNS } }
    }))

  keys.command('show')
    .description('show an API key, its secrets and how the old one is used during a rotation')
    .argument('<id>', 'key id')
    .action(identityAction(io, async ({ args, services }) => {
      const id = checkedArgument(Id, args[0], 'id')
      const s = await services()
      return { body: { api_key: view(s, id) } }
    }))

  withPolicyOptions(addExpiryOptions(keys.command('update')), true)
    .description("change an API key's permissions, expiry or traffic policies (--policy replaces them all)")
    .argument('<id>', 'key id')
    .option('--permissions <list>', 'comma-separated permissions (replaces the current ones)')
    .addOption(new Option('--no-expiry', 'remove the expiry').conflicts(['expiresAt', 'expiresIn']))
    .action(identityAction<ExpiryOptions & PolicyOptions & { permissions?: string }>(io, async ({ args, options, services }) => {
      const id = checkedArgument(Id, args[0], 'id')
      const permissions = options.permissions !== undefined ? checked(Permissions, parseList(options.permissions), '--permissions', PERMISSIONS_HINT) : undefined
      const expiry = expiryFrom(options)
      const policies = policiesFrom(options)
      if (permissions === undefined && expiry === undefined && policies === undefined) {
        throw new UsageError('nothing to change: give --permissions, --expires-at, --expires-in, --no-expiry, --policy or --no-policies')
      }
      const s = await services()
      const { key, warnings } = await s.apiKeys.update(id, {
        ...(permissions !== undefined ? { permissions } : {}),
        ...(expiry !== undefined ? { expiresAt: expiry(s.clock.now()) } : {}),
        ...(policies !== undefined ? { policies } : {})
      })
      for (const warning of warnings) warn(io, warning)
      return { body: { api_key: view(s, key.id), warnings } }
    }))

  for (const [action, description] of [
    ['disable', 'disable an API key (reversible with enable)'],
    ['enable', 'enable a disabled API key'],
    ['revoke', 'revoke an API key (final)']
  ] as const) {
    keys.command(action)
      .description(description)
      .argument('<id>', 'key id')
      .action(identityAction(io, async ({ args, services }) => {
        const id = checkedArgument(Id, args[0], 'id')
        const s = await services()
        const key = action === 'revoke' ? await s.apiKeys.revoke(id) : await s.apiKeys.setDisabled(id, action === 'disable')
        return { body: { api_key: view(s, key.id) } }
      }))
  }

  keys.command('rotate')
    .description('issue a new secret, printed once; the old one keeps working for the grace period (default from IDENTITY_API_KEY_ROTATION_GRACE_SECONDS, 24h)')
    .argument('<id>', 'key id')
    .addOption(new Option('--grace <duration>', 'how long the old secret keeps working, e.g. 24h, 7d or 0s').conflicts('graceSeconds'))
    .addOption(new Option('--grace-seconds <n>', 'the same in seconds'))
    .action(identityAction<{ grace?: string, graceSeconds?: string }>(io, async ({ args, options, services }) => {
      const id = checkedArgument(Id, args[0], 'id')
      const graceSeconds = options.grace !== undefined
        ? checked(GraceSeconds, parseDurationSeconds(options.grace, '--grace'), '--grace')
        : options.graceSeconds !== undefined
          ? checked(GraceSeconds, parseWholeNumber(options.graceSeconds, '--grace-seconds'), '--grace-seconds')
          : undefined
      const s = await services()
      return createdAnswer(s, io, await s.apiKeys.rotate(id, graceSeconds))
    }))
}
