import type { IncomingHttpHeaders } from 'node:http'
import type { Authenticate } from '../auth/authenticate.js'
import type { RequestParty } from '../traffic/applied-policies.js'
import type { Admission, TrafficControl } from '../traffic/traffic-control.js'
import { GATEWAY_SPANS, type RequestSpan } from './request-tracing.js'

/**
 * The two decision stages a request and a verify question share, each under a span of
 * its own when the request is traced. Untraced (`span` null) they are called as they
 * are, with no closure made for them.
 */

/** The credential's principal; identity's check, on a cache miss, joins the stage's span. */
export function authenticateTraced (authenticate: Authenticate, span: RequestSpan | null, headers: IncomingHttpHeaders): ReturnType<Authenticate> {
  return span === null ? authenticate(headers) : span.stage(GATEWAY_SPANS.authenticate, (parent) => authenticate(headers, parent))
}

/** Traffic control's decision. */
export function admitTraced (traffic: Pick<TrafficControl, 'admit'>, span: RequestSpan | null, party: RequestParty): Admission | Promise<Admission> {
  return span === null ? traffic.admit(party) : span.stage(GATEWAY_SPANS.traffic, () => traffic.admit(party))
}
