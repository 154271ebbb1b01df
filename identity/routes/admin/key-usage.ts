import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type, type Static } from 'typebox'
import { CommonProblems, type ProblemFactory } from '../../../common/problem.js'
import { problemResponses } from '../../../common/problem-schema.js'
import { IdentityProblems } from '../../errors.js'
import { Id, IdParams, Timestamp } from '../../schemas.js'
import type { IdentityServices } from '../../services/index.js'
import { USAGE_STEPS, type UsageBucket } from '../../services/key-usage.js'
import { OPERATOR_PERMISSIONS } from '../../../common/operator-permissions.js'
import { ADMIN_PROBLEMS } from './credential-guard.js'
import { operator } from './operator-route.js'

/**
 * The range of a usage series. `step` (default `hour`) is the width of a bucket (UTC);
 * without `from` and `to` the last 24 hours, or the last 30 days (the current hour or
 * day included); a range is widened to whole buckets and holds at most 2232 of them.
 */
export const KeyUsageQuery = Type.Object({
  from: Type.Optional(Timestamp),
  to: Type.Optional(Timestamp),
  step: Type.Enum(USAGE_STEPS, { default: 'hour' })
}, { additionalProperties: false })
export type KeyUsageQuery = Static<typeof KeyUsageQuery>

const Count = Type.Integer({ minimum: 0 })
/** `total` is the requests seen: allowed + forbidden + rate_limited + quota_exhausted (upstream errors are among the allowed). */
const OutcomeCounts = {
  allowed: Count,
  forbidden: Count,
  rate_limited: Count,
  quota_exhausted: Count,
  upstream_error: Count,
  total: Count
}

export const KeyUsageAnswer = Type.Object({
  key_id: Id,
  step: Type.Enum(USAGE_STEPS),
  /** The start of the first bucket and the end of the last. */
  from: Timestamp,
  to: Timestamp,
  /** Every bucket of the range, oldest first, zero-filled. */
  buckets: Type.Array(Type.Object({ start: Timestamp, ...OutcomeCounts })),
  totals: Type.Object(OutcomeCounts)
})
export type KeyUsageAnswer = Static<typeof KeyUsageAnswer>

/** What a usage route answers besides its credential's refusals: a bad range, an unknown key. */
export const KEY_USAGE_PROBLEMS: readonly ProblemFactory[] = [CommonProblems.validationFailed, IdentityProblems.keyNotFound]

const iso = (ms: number): string => new Date(ms).toISOString()
const bucketView = (bucket: UsageBucket): KeyUsageAnswer['buckets'][number] => ({ ...bucket, start: iso(bucket.start) })

/**
 * The usage answer for one key, once the caller may see it: `GET /admin/keys/{id}/usage`
 * here, and the owner's own view of their key elsewhere. Throws key_not_found and
 * validation_failed (KEY_USAGE_PROBLEMS).
 */
export function keyUsageAnswer (services: Pick<IdentityServices, 'keyUsage'>, keyId: string, query: KeyUsageQuery): KeyUsageAnswer {
  const series = services.keyUsage.series(keyId, {
    from: query.from === undefined ? undefined : Date.parse(query.from),
    to: query.to === undefined ? undefined : Date.parse(query.to),
    step: query.step
  })
  return { key_id: series.keyId, step: series.step, from: iso(series.from), to: iso(series.to), buckets: series.buckets.map(bucketView), totals: series.totals }
}

/** GET /admin/keys/{id}/usage: a key's requests over time, by outcome, per hour or day. */
export const adminKeyUsageRoutes: FastifyPluginAsyncTypebox<{ services: IdentityServices }> = async (app, { services }) => {
  app.get('/admin/keys/:id/usage', {
    ...operator(OPERATOR_PERMISSIONS.keys),
    schema: {
      summary: "An API key's requests over time: allowed, forbidden, rate-limited, quota-exhausted, upstream errors",
      tags: ['api-keys'],
      params: IdParams,
      querystring: KeyUsageQuery,
      response: { 200: KeyUsageAnswer, ...problemResponses(ADMIN_PROBLEMS, KEY_USAGE_PROBLEMS) }
    }
  }, async (request, reply) => {
    reply.header('cache-control', 'no-store')
    return keyUsageAnswer(services, request.params.id, request.query)
  })
}
