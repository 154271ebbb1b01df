import { Readable } from 'node:stream'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type, type Static } from 'typebox'
import { acceptsJson, type AcceptRouteConfig } from '../../../common/accept.js'
import { CommonProblems } from '../../../common/problem.js'
import { BODY_PROBLEMS, problemResponses } from '../../../common/problem-schema.js'
import { Timestamp } from '../../schemas.js'
import { DEFAULT_PAGE_LIMIT, MAX_PAGE_LIMIT, type AuditRecordView } from '../../services/audit.js'
import type { AuditActorType } from '../../services/audit-context.js'
import { HEAD_CHECK_REASONS } from '../../services/audit-head.js'
import type { AuditFilter, AuditOrder } from '../../store/audit-store.js'
import type { IdentityServices } from '../../services/index.js'
import { OPERATOR_PERMISSIONS } from '../../../common/operator-permissions.js'
import { requireOrderedRange } from '../../services/query-range.js'
import { ADMIN_PROBLEMS } from './credential-guard.js'
import { operator } from './operator-route.js'

const closed = { additionalProperties: false } as const
const tags = ['audit']
const NDJSON = 'application/x-ndjson'
const Hash = Type.String({ pattern: '^[0-9a-f]{64}$', description: 'SHA-256, lowercase hex' })
const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) => Type.Union([schema, Type.Null()])
const Name = Type.String({ minLength: 1, maxLength: 256 })

const AUDIT_ACTOR_TYPES = ['user', 'admin_token', 'cli', 'system', 'anonymous'] as const satisfies readonly AuditActorType[]
export const AuditActorTypeSchema = Type.Enum(AUDIT_ACTOR_TYPES)
export const AuditAction = Type.String({ pattern: '^[a-z][a-z0-9_.]{0,63}$', description: 'e.g. key.create, user.disable, login' })
export const AuditOrderSchema = Type.Union([Type.Literal('newest'), Type.Literal('oldest')], { default: 'newest' })
export const AuditLimit = Type.Integer({ minimum: 1, maximum: MAX_PAGE_LIMIT, default: DEFAULT_PAGE_LIMIT })

export const AuditOutcomeSchema = Type.Union([Type.Literal('success'), Type.Literal('failure')])

export const AuditRecordSchema = Type.Object({
  seq: Type.Integer({ minimum: 1 }),
  id: Type.String(),
  at: Timestamp,
  action: Type.String(),
  outcome: AuditOutcomeSchema,
  error_code: Nullable(Type.String()),
  actor: Type.Object({ type: Type.String(), id: Nullable(Type.String()) }),
  source: Type.Object({ ip: Nullable(Type.String()), user_agent: Nullable(Type.String()), request_id: Nullable(Type.String()) }),
  target: Nullable(Type.Object({ type: Type.String(), id: Nullable(Type.String()), name: Nullable(Type.String()) })),
  changes: Nullable(Type.Object({ before: Type.Optional(Type.Unknown()), after: Type.Optional(Type.Unknown()) })),
  prev_hash: Hash,
  hash: Hash
}, { description: 'hash = SHA-256 hex of prev_hash followed by the RFC 8785 canonical JSON of this record without prev_hash and hash' })

export const AuditPageSchema = Type.Object({
  records: Type.Array(AuditRecordSchema),
  next_cursor: Nullable(Type.String({ description: 'the cursor of the next page; null on the last' }))
})

export const AuditListQuery = Type.Object({
  actor_type: Type.Optional(AuditActorTypeSchema),
  actor_id: Type.Optional(Name),
  action: Type.Optional(AuditAction),
  outcome: Type.Optional(AuditOutcomeSchema),
  target_type: Type.Optional(Type.String({ pattern: '^[a-z][a-z0-9_]{0,31}$' })),
  target_id: Type.Optional(Name),
  from: Type.Optional(Timestamp),
  to: Type.Optional(Timestamp),
  order: AuditOrderSchema,
  limit: AuditLimit,
  cursor: Type.Optional(Type.String({ maxLength: 64, description: 'next_cursor of the previous page, for the same order' })),
  format: Type.Optional(Type.Union([Type.Literal('json'), Type.Literal('ndjson')], { description: `ndjson (or Accept: ${NDJSON}): every matching record, one per line` }))
}, closed)

export const ChainVerificationSchema = Type.Object({
  valid: Type.Boolean(),
  checked: Type.Integer({ minimum: 0, description: 'records verified before the answer' }),
  first_broken_seq: Nullable(Type.Integer({ minimum: 1 }))
})

const SignedHead = Type.Object({
  head: Type.String({ description: 'compact JWS (typ portier-audit-head+jws) of {iss, seq, hash, at, signed_at}, verified by /.well-known/jwks.json' }),
  iss: Type.String(),
  seq: Type.Integer({ minimum: 0 }),
  hash: Hash,
  at: Nullable(Timestamp),
  signed_at: Timestamp
})

const HeadCheckSchema = Type.Object({
  valid: Type.Boolean(),
  reason: Type.Enum(HEAD_CHECK_REASONS),
  seq: Nullable(Type.Integer({ minimum: 0 })),
  hash: Nullable(Hash),
  chain: Nullable(ChainVerificationSchema)
})

/** The query's filter members, as the service takes them; a `from` not before `to` is refused (it could match nothing). */
export function auditFilterOf (query: Pick<Static<typeof AuditListQuery>, 'actor_type' | 'actor_id' | 'action' | 'outcome' | 'target_type' | 'target_id' | 'from' | 'to'>): AuditFilter {
  const from = query.from === undefined ? undefined : Date.parse(query.from)
  const to = query.to === undefined ? undefined : Date.parse(query.to)
  requireOrderedRange(from, to)
  return {
    ...(query.actor_type !== undefined ? { actorType: query.actor_type } : {}),
    ...(query.actor_id !== undefined ? { actorId: query.actor_id } : {}),
    ...(query.action !== undefined ? { action: query.action } : {}),
    ...(query.outcome !== undefined ? { outcome: query.outcome } : {}),
    ...(query.target_type !== undefined ? { targetType: query.target_type } : {}),
    ...(query.target_id !== undefined ? { targetId: query.target_id } : {}),
    ...(from !== undefined ? { from } : {}),
    ...(to !== undefined ? { to } : {})
  }
}

/** NDJSON when asked by the query, or by an Accept that names it; else JSON, if the Accept allows it. */
function wantsNdjson (format: string | undefined, accept: string | undefined): boolean {
  if (format !== undefined) return format === 'ndjson'
  if (accept?.toLowerCase().includes(NDJSON) === true) return true
  if (!acceptsJson(accept)) throw CommonProblems.notAcceptable()
  return false
}

async function * ndjsonLines (records: AsyncIterable<AuditRecordView>): AsyncGenerator<string> {
  for await (const record of records) yield `${JSON.stringify(record)}\n`
}

/** /admin/audit: read, export and verify the audit trail; its signed head. */
export const adminAuditRoutes: FastifyPluginAsyncTypebox<{ services: IdentityServices }> = async (app, { services }) => {
  const { audit } = services
  const auditor = operator(OPERATOR_PERMISSIONS.audit)

  app.get('/admin/audit', {
    config: { ...auditor.config, acceptsAnyMediaType: true } satisfies AcceptRouteConfig,
    schema: {
      summary: 'List audit records (a page, newest first by default), or export every matching one as NDJSON',
      description: 'Filters narrow together; `from` is inclusive, `to` exclusive (and `from` before `to`). JSON answers a page: pass `next_cursor` as `cursor` for the next ' +
        `(same order). With \`format=ndjson\` or \`Accept: ${NDJSON}\`, every matching record is streamed as ${NDJSON}, one record a line; ` +
        '`limit` and `cursor` then do not apply.',
      tags,
      querystring: AuditListQuery,
      response: {
        200: {
          description: `A page as JSON, or every matching record as ${NDJSON} (one record per line)`,
          // The NDJSON body is a stream of records: typed as what the handler sends, documented as one record.
          content: { 'application/json': { schema: AuditPageSchema }, [NDJSON]: { schema: Type.Unsafe<Readable>(AuditRecordSchema) } }
        },
        ...problemResponses(ADMIN_PROBLEMS, CommonProblems.validationFailed)
      }
    }
  }, async (request, reply) => {
    const { query } = request
    const filter = auditFilterOf(query)
    const order: AuditOrder = query.order
    if (wantsNdjson(query.format, request.headers.accept)) {
      return await reply.type(NDJSON).header('cache-control', 'no-store').send(Readable.from(ndjsonLines(audit.export(filter, order))))
    }
    return reply.type('application/json; charset=utf-8').header('cache-control', 'no-store')
      .send(audit.list({ filter, order, limit: query.limit, ...(query.cursor !== undefined ? { cursor: query.cursor } : {}) }))
  })

  app.get('/admin/audit/verify', {
    ...auditor,
    schema: {
      summary: 'Verify the hash chain from the anchor (or the first record) to the last record',
      tags,
      response: { 200: ChainVerificationSchema, ...problemResponses(ADMIN_PROBLEMS) }
    }
  }, async () => await audit.verify())

  app.get('/admin/audit/head', {
    ...auditor,
    schema: {
      summary: "The trail's last seq and hash, signed with identity's current signing key: keep copies elsewhere",
      tags,
      response: { 200: SignedHead, ...problemResponses(ADMIN_PROBLEMS) }
    }
  }, async (_request, reply) => await reply.header('cache-control', 'no-store').send(await audit.heads.sign()))

  app.post('/admin/audit/head/verify', {
    ...auditor,
    schema: {
      summary: 'Check a head signed earlier against the trail now: valid iff its signature verifies, the record at its seq still has its hash and the chain verifies',
      tags,
      body: Type.Object({ head: Type.String({ minLength: 1, maxLength: 4096 }) }, closed),
      response: { 200: HeadCheckSchema, ...problemResponses(ADMIN_PROBLEMS, BODY_PROBLEMS) }
    }
  }, async (request) => await audit.heads.check(request.body.head))
}
