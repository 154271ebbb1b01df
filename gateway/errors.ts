import type { KeyInvalidReason } from '../common/internal-api.js'
import { bearerChallenge, defineProblem } from '../common/problem.js'

/** RFC 6750 §3.1: `invalid_token` for any credential that was sent and refused. */
const invalidCredentialChallenge = { 'www-authenticate': bearerChallenge('invalid_token') }

/**
 * The gateway's problem table. Codes are stable and never reused; docs/errors.md lists
 * each one and a test keeps the two in step. Details never echo a credential.
 * `credentials_missing` and `invalid_token` are shared with identity (AuthProblems).
 */
export const GatewayProblems = {
  malformedPath: defineProblem('malformed_path', 400, 'Malformed path', 'The request path is refused: %s.'),
  methodOverrideRefused: defineProblem('method_override_refused', 400, 'Method override refused',
    '%s is not accepted: send the real HTTP method.'),
  malformedHost: defineProblem('malformed_host', 400, 'Malformed Host', 'The Host is refused: %s.'),
  misdirectedRequest: defineProblem('misdirected_request', 421, 'Misdirected request', 'This gateway does not serve the host %s.'),
  notWebSocketRoute: defineProblem('not_websocket_route', 400, 'Not a WebSocket route', 'The route %s %s does not take a WebSocket upgrade.'),
  webSocketUpgradeRequired: defineProblem('websocket_upgrade_required', 426, 'WebSocket upgrade required', 'The route %s %s is a WebSocket route: send an upgrade request.',
    { upgrade: 'websocket' }),
  headerNotForwardable: defineProblem('header_not_forwardable', 400, 'Request header not forwardable',
    'A request header cannot be forwarded: %s.'),
  methodNotAllowed: defineProblem('method_not_allowed', 405, 'Method not allowed', '%s is not declared for this path.'),
  corsPreflightRefused: defineProblem('cors_preflight_refused', 403, 'CORS preflight refused', 'A browser may not make this request from another site: %s.'),
  invalidInflection: defineProblem('invalid_inflection', 400, 'Invalid x-api-inflection',
    'x-api-inflection must be one of: %s.'),
  conflictingCredentials: defineProblem('conflicting_credentials', 400, 'Conflicting credentials',
    'Send either x-api-key or Authorization: Bearer, not both.'),
  invalidApiKey: defineProblem('invalid_api_key', 401, 'Invalid API key', 'The API key is %s.', invalidCredentialChallenge),
  permissionDenied: defineProblem('permission_denied', 403, 'Permission denied', 'This credential lacks the permission %s.'),
  permissionNotDeclared: defineProblem('permission_not_declared', 403, 'Route not permitted',
    'No permission is declared for %s %s, so the gateway denies it.'),
  bodyTooDeep: defineProblem('body_too_deep', 400, 'JSON body nested too deeply',
    'The JSON body is nested deeper than %s levels and cannot be inflected.'),
  bodyTooWide: defineProblem('body_too_wide', 400, 'JSON body has too many members',
    'The JSON body has more than %s object members and cannot be inflected.'),
  duplicateMember: defineProblem('duplicate_member', 400, 'Duplicate member name',
    'Two members of one object of the JSON body have the same name once converted to the upstream\'s key case.'),
  identityUnavailable: defineProblem('identity_unavailable', 503, 'Identity unavailable',
    'The API key cannot be verified right now; retry later.', { 'retry-after': '5' }),
  upstreamUnavailable: defineProblem('upstream_unavailable', 502, 'Upstream unavailable', 'The upstream service %s did not answer.'),
  upstreamTimeout: defineProblem('upstream_timeout', 504, 'Upstream timeout', 'The upstream service %s did not answer within %s ms.'),
  metricsUnauthorized: defineProblem('metrics_unauthorized', 401, 'Metrics credential required',
    'Send the metrics token as Authorization: Bearer.'),
  rateLimited: defineProblem('rate_limited', 429, 'Rate limit exceeded',
    'The rate limit %s allows no more requests now; retry after %s seconds.'),
  quotaExhausted: defineProblem('quota_exhausted', 429, 'Quota exhausted',
    'The quota %s is used up; it refills in %s seconds.'),
  concurrencyLimited: defineProblem('concurrency_limited', 429, 'Too many requests in flight',
    'The concurrency limit %s allows no more requests in flight; retry when one has been answered.'),
  trafficControlUnavailable: defineProblem('traffic_control_unavailable', 503, 'Limits cannot be checked',
    'The limits of this request cannot be checked right now; retry shortly.', { 'retry-after': '1' }),
  upstreamBodyNotInflectable: defineProblem('upstream_body_not_inflectable', 502, 'Upstream body not inflectable',
    'The upstream answered JSON that cannot be inflected: %s.'),
  verifyCallerRefused: defineProblem('verify_caller_refused', 403, 'Not a verify client',
    'This address may not %s (GATEWAY_VERIFY_CLIENTS, GATEWAY_VERIFY_PROXIES).'),
  verifyQuestionInvalid: defineProblem('verify_question_invalid', 400, 'Request to verify not described',
    'The request to verify is not described: %s.')
} as const

/**
 * Public wording that fills the `%s` of the details above or stands as a whole detail
 * (the shared AuthProblems too; common/problem.ts has those identity gives as well):
 * kept with the table, never inline.
 */
export const GatewayDetails = {
  credentialsMissing: 'Send an API key as x-api-key or an access token as Authorization: Bearer.',
  sessionRevoked: 'The session of this token has been revoked.',
  permissionsChanged: 'The permissions of this user changed after the token was issued; refresh it.',
  /** methodOverrideRefused: what asked for another method. */
  overrideHeader: (header: string) => `The ${header} header`,
  overrideQuery: 'A _method query parameter (in any spelling)',
  overrideBody: 'A _method member of the JSON body (in any spelling)',
  /** corsPreflightRefused: why. */
  corsOriginRefused: 'its origin is not allowed to call this route',
  corsMethodRefused: (method: string) => `${method} is not among the methods this route allows cross-origin`,
  /** malformedHost */
  repeatedHost: 'more than one Host header',
  /** upstreamBodyNotInflectable: why. */
  upstreamBodyTooLarge: (limitBytes: number) => `larger than ${limitBytes} bytes`,
  upstreamBodyUndecodable: (encoding: string) => `its ${encoding} encoding does not decode`,
  upstreamBodyNotJson: 'it is not valid JSON',
  upstreamBodyTooDeep: (maxDepth: number) => `it is nested deeper than ${maxDepth} levels`,
  upstreamBodyTooWide: (maxMembers: number) => `it has more than ${maxMembers} object members`
} as const

/**
 * What `invalid_api_key` says for each reason identity gives (`The API key is %s.`).
 * A reason identity may add is a compile error here until it is worded.
 */
export const INVALID_API_KEY_DETAILS = {
  malformed: 'malformed (wrong prefix, length or checksum)',
  unknown: 'unknown',
  expired: 'expired',
  revoked: 'revoked',
  disabled: 'disabled',
  secret_retired: 'a secret retired by rotation'
} as const satisfies Record<KeyInvalidReason, string>
