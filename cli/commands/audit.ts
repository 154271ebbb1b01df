import { Option, type Command } from 'commander'
import { Type } from 'typebox'
import { AuditAction, AuditActorTypeSchema, AuditLimit, AuditOutcomeSchema, auditFilterOf } from '../../identity/routes/admin/audit.js'
import { Timestamp } from '../../identity/schemas.js'
import type { CliIo } from '../io.js'
import { identityAction } from '../identity-action.js'
import { checked, checkedArgument, parseWholeNumber, TIMESTAMP_HINT } from '../input.js'

const RECORD_COLUMNS = ['seq', 'at', 'action', 'outcome', 'error_code', 'actor', 'target']
const Name = Type.String({ minLength: 1, maxLength: 256 })
const TargetType = Type.String({ pattern: '^[a-z][a-z0-9_]{0,31}$' })
const SignedHead = Type.String({ minLength: 1, maxLength: 4096 })

interface ListOptions {
  actorType?: string
  actorId?: string
  action?: string
  outcome?: string
  targetType?: string
  targetId?: string
  from?: string
  to?: string
  order: 'newest' | 'oldest'
  limit?: string
  cursor?: string
}

/** `portier audit …`: read and verify the audit trail, as /admin/audit does. */
export function registerAuditCommands (program: Command, io: CliIo): void {
  const audit = program.command('audit').description('the audit trail: list its records, verify its hash chain, check a signed head')

  audit.command('list')
    .description('list audit records, newest first (a page; --cursor continues with the next_cursor printed)')
    .option('--actor-type <type>', 'user, admin_token, cli, system or anonymous')
    .option('--actor-id <id>', 'a user id, the OS user of a CLI run, a system component')
    .option('--action <action>', 'e.g. key.create, user.disable, login')
    .option('--outcome <outcome>', 'success or failure (refused attempts, failed logins)')
    .option('--target-type <type>', 'e.g. user, role, api_key, session, signing_key')
    .option('--target-id <id>', 'the id (or role name) acted on')
    .option('--from <time>', 'records at or after this time (ISO 8601 with a zone)')
    .option('--to <time>', 'records before this time (ISO 8601 with a zone)')
    .addOption(new Option('--order <order>', 'newest or oldest first').choices(['newest', 'oldest']).default('newest'))
    .option('--limit <n>', 'records per page (1 to 500, default 100)')
    .option('--cursor <cursor>', 'the next_cursor of the previous page (same order)')
    .action(identityAction<ListOptions>(io, async ({ options, services }) => {
      const filter = auditFilterOf({
        ...(options.actorType !== undefined ? { actor_type: checked(AuditActorTypeSchema, options.actorType, '--actor-type') } : {}),
        ...(options.actorId !== undefined ? { actor_id: checked(Name, options.actorId, '--actor-id') } : {}),
        ...(options.action !== undefined ? { action: checked(AuditAction, options.action, '--action') } : {}),
        ...(options.outcome !== undefined ? { outcome: checked(AuditOutcomeSchema, options.outcome, '--outcome') } : {}),
        ...(options.targetType !== undefined ? { target_type: checked(TargetType, options.targetType, '--target-type') } : {}),
        ...(options.targetId !== undefined ? { target_id: checked(Name, options.targetId, '--target-id') } : {}),
        ...(options.from !== undefined ? { from: checked(Timestamp, options.from, '--from', TIMESTAMP_HINT) } : {}),
        ...(options.to !== undefined ? { to: checked(Timestamp, options.to, '--to', TIMESTAMP_HINT) } : {})
      })
      const limit = options.limit !== undefined ? checked(AuditLimit, parseWholeNumber(options.limit, '--limit'), '--limit') : 100
      const s = await services()
      const page = s.audit.list({ filter, order: options.order, limit, ...(options.cursor !== undefined ? { cursor: options.cursor } : {}) })
      return { body: { ...page }, columns: { records: RECORD_COLUMNS } }
    }))

  audit.command('verify')
    .description('verify the hash chain from the anchor to the last record; exits 1 when it is broken')
    .action(identityAction(io, async ({ services }) => {
      const s = await services()
      const result = await s.audit.verify()
      return {
        body: { ...result },
        ...(result.valid ? {} : { failure: `the audit trail is broken at seq ${String(result.first_broken_seq)}` })
      }
    }))

  audit.command('check-head')
    .description('check a signed head (from GET /admin/audit/head, kept elsewhere) against the trail now; exits 1 unless it matches')
    .argument('<head>', 'the compact JWS')
    .action(identityAction(io, async ({ args, services }) => {
      const head = checkedArgument(SignedHead, args[0], 'head')
      const s = await services()
      const result = await s.audit.heads.check(head)
      return { body: { ...result }, ...(result.valid ? {} : { failure: `the signed head does not match the trail: ${result.reason}` }) }
    }))
}
