import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { QUOTA_USAGE_MAX_ENTRIES, QUOTA_USAGE_PATH, QuotaTotals, QuotaUsageReport } from '../../../common/internal-api.js'
import { BODY_PROBLEMS, problemResponses } from '../../../common/problem-schema.js'
import { SERVICE_PROBLEMS } from '../admin/credential-guard.js'
import type { IdentityServices } from '../../services/index.js'

/**
 * The body limit of the quota route: an entry at its longest (a 2600-character
 * counter, the largest period start and count) is about 2 680 bytes of JSON, and a
 * report holds at most QUOTA_USAGE_MAX_ENTRIES uses and as many reads. No character
 * of a counter needs escaping (QUOTA_COUNTER_PATTERN), so the bound is exact.
 */
export const QUOTA_USAGE_BODY_LIMIT_BYTES = 2 * QUOTA_USAGE_MAX_ENTRIES * 2_700 + 1_024

/**
 * POST /internal/quotas/usage: the quota units a gateway counted, added in one
 * transaction, and the totals it asks for (schemas: common/internal-api.ts). The body
 * limit is the route's, whatever the listener's: the largest report always fits.
 */
export const quotasUsageRoutes: FastifyPluginAsyncTypebox<{ services: IdentityServices }> = async (app, { services }) => {
  app.post(QUOTA_USAGE_PATH, {
    bodyLimit: QUOTA_USAGE_BODY_LIMIT_BYTES,
    schema: {
      summary: 'Add the quota units a gateway counted and answer the totals',
      tags: ['internal'],
      security: [{ serviceCredential: [] }],
      body: QuotaUsageReport,
      response: { 200: QuotaTotals, ...problemResponses(SERVICE_PROBLEMS, BODY_PROBLEMS) }
    }
  }, async (request, reply) => {
    const uses = request.body.uses.map((use) => ({ counter: use.counter, periodStart: use.period_start, count: use.count }))
    const reads = request.body.read.map((read) => ({ counter: read.counter, periodStart: read.period_start }))
    const { duplicate, counts } = services.quotas.record(request.body.batch_id, uses, reads)
    reply.header('cache-control', 'no-store')
    return { duplicate, counters: counts.map((c) => ({ counter: c.counter, period_start: c.periodStart, used: c.used })) }
  })
}
