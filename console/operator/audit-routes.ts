import type { FastifyInstance } from 'fastify'
import type { Problem } from '../http-json.js'
import type { IdentityClient } from '../identity-client.js'
import { operatorUser } from '../page-user.js'
import { AUDIT_EXPORT_PATH, AUDIT_PATH, auditExportRefusedPage, auditPage, type AuditListing, type ChainVerification, type VerificationResult } from '../pages/operator/audit.js'
import { clientFacts } from '../session.js'
import type { AdminClient } from './admin-client.js'
import { auditViewOf, identityQuery } from './audit-query.js'

const HTML = 'text/html; charset=utf-8'
const NDJSON = 'application/x-ndjson'

/** Identity's refusal as the page's status: its own when it is about the request (400, 403), else the console's 502. */
const statusOf = (problem: Problem): number => problem.status >= 400 && problem.status < 500 ? problem.status : 502

/** The export's file name: the day it was taken, so successive exports sort and do not overwrite each other's names by surprise. */
const exportFileName = (now: number): string => `portier-audit-${new Date(now).toISOString().slice(0, 10)}.ndjson`

/**
 * Audit: the trail's verification, a filtered page of records and the export of every
 * matching one, each read from identity's admin API with the operator's own token
 * (identity checks admin:audit again on every call).
 */
export function auditRoutes (app: FastifyInstance, deps: { identity: IdentityClient, admin: AdminClient, now: () => number }): void {
  const { identity, admin, now } = deps

  app.get(AUDIT_PATH, async (request, reply) => {
    const user = await operatorUser(request, reply, identity, now(), 'audit')
    if (user === null) return reply
    const view = auditViewOf(request.query)
    const client = clientFacts(request)
    const [verified, listed] = await Promise.all([
      admin.call<ChainVerification>('GET', '/admin/audit/verify', user.access, client),
      admin.call<AuditListing>('GET', `/admin/audit?${identityQuery(view.filters, { limit: view.limit, cursor: view.cursor })}`, user.access, client)
    ])
    const verification: VerificationResult = verified.ok ? { ok: true, body: verified.body } : { ok: false, detail: verified.problem.detail }
    return await reply.code(listed.ok ? 200 : statusOf(listed.problem)).type(HTML).send(auditPage({
      user,
      now: now(),
      view,
      verification,
      listing: listed.ok ? listed.body : null,
      refusal: listed.ok ? null : listed.problem
    }))
  })

  app.get(AUDIT_EXPORT_PATH, async (request, reply) => {
    const user = await operatorUser(request, reply, identity, now(), 'audit')
    if (user === null) return reply
    const { filters } = auditViewOf(request.query)
    const answer = await admin.stream(`/admin/audit?${identityQuery(filters, { format: 'ndjson' })}`, user.access, clientFacts(request), NDJSON)
    if (!answer.ok) return await reply.code(statusOf(answer.problem)).type(HTML).send(auditExportRefusedPage(user, filters, answer.problem))
    // Piped as identity sends it: the export is never held whole in the console's memory.
    return await reply.type(NDJSON)
      .header('content-disposition', `attachment; filename="${exportFileName(now())}"`)
      .header('cache-control', 'no-store')
      .send(answer.body)
  })
}
