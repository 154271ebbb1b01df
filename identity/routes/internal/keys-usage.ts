import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { KEY_USAGE_BODY_LIMIT_BYTES, KEYS_USAGE_PATH, KeyUsageReceipt, KeyUsageReport } from '../../../common/internal-api.js'
import { BODY_PROBLEMS, problemResponses } from '../../../common/problem-schema.js'
import { SERVICE_PROBLEMS } from '../admin/credential-guard.js'
import type { IdentityServices } from '../../services/index.js'

/**
 * POST /internal/keys/usage: the API key uses a gateway counted, applied in one
 * transaction (schemas: common/internal-api.ts). The body limit is the contract's,
 * whatever the listener's: the largest report a gateway sends always fits.
 */
export const keysUsageRoutes: FastifyPluginAsyncTypebox<{ services: IdentityServices }> = async (app, { services }) => {
  app.post(KEYS_USAGE_PATH, {
    bodyLimit: KEY_USAGE_BODY_LIMIT_BYTES,
    schema: {
      summary: 'Record the API key uses a gateway counted',
      tags: ['internal'],
      security: [{ serviceCredential: [] }],
      body: KeyUsageReport,
      response: { 200: KeyUsageReceipt, ...problemResponses(SERVICE_PROBLEMS, BODY_PROBLEMS) }
    }
  }, async (request, reply) => {
    const uses = request.body.uses.map((use) => ({
      lookupId: use.lookup_id,
      count: use.count,
      lastUsedAt: Date.parse(use.last_used_at),
      route: use.last_route,
      ip: use.last_ip
    }))
    reply.header('cache-control', 'no-store')
    return services.apiKeys.recordUses(request.body.batch_id, uses)
  })
}
