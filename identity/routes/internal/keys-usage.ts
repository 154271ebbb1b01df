import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { KEY_USAGE_BODY_LIMIT_BYTES, KEYS_USAGE_PATH, KeyUsageReceipt, KeyUsageReport } from '../../../common/internal-api.js'
import { CommonProblems } from '../../../common/problem.js'
import { BODY_PROBLEMS, problemResponses } from '../../../common/problem-schema.js'
import { SERVICE_PROBLEMS } from '../admin/credential-guard.js'
import type { IdentityServices } from '../../services/index.js'

/** What an empty report is refused with: the schema allows either list empty, not both. */
const NOTHING_REPORTED = 'body a report holds at least one use or hour'

/**
 * POST /internal/keys/usage: the API key uses and hourly outcomes a gateway counted,
 * applied in one transaction (schemas: common/internal-api.ts). The body limit is the
 * contract's, whatever the listener's: the largest report a gateway sends always fits.
 */
export const keysUsageRoutes: FastifyPluginAsyncTypebox<{ services: IdentityServices }> = async (app, { services }) => {
  app.post(KEYS_USAGE_PATH, {
    bodyLimit: KEY_USAGE_BODY_LIMIT_BYTES,
    schema: {
      summary: 'Record the API key uses and outcomes a gateway counted',
      tags: ['internal'],
      security: [{ serviceCredential: [] }],
      body: KeyUsageReport,
      response: { 200: KeyUsageReceipt, ...problemResponses(SERVICE_PROBLEMS, BODY_PROBLEMS) }
    }
  }, async (request, reply) => {
    const { batch_id: batchId, hours } = request.body
    if (request.body.uses.length === 0 && (hours?.length ?? 0) === 0) throw CommonProblems.validationFailed([NOTHING_REPORTED])
    const uses = request.body.uses.map((use) => ({
      lookupId: use.lookup_id,
      count: use.count,
      lastUsedAt: Date.parse(use.last_used_at),
      route: use.last_route,
      ip: use.last_ip
    }))
    const outcomes = hours?.map(({ lookup_id: lookupId, hour_start: hourStart, ...counts }) => ({ lookupId, hourStart: Date.parse(hourStart), ...counts })) ?? null
    reply.header('cache-control', 'no-store')
    return services.keyUsage.record(batchId, uses, outcomes)
  })
}
