import type { KeyInvalidReason } from '../../common/internal-api.js'
import { AuthDetails, AuthProblems, CommonProblems, isPortierProblem, type PortierProblem } from '../../common/problem.js'
import { GatewayDetails, GatewayProblems, INVALID_API_KEY_DETAILS } from '../errors.js'
import type { Verdict } from './decide.js'

/**
 * The verify API's decision codes, in the style of Unkey's verifyKey (so a proxy
 * plugin written for one reads the other): VALID, or why not. REVOKED is Portier's
 * own (Unkey deletes a revoked key, which is then NOT_FOUND); UNAVAILABLE is no
 * decision: the credential or the limits cannot be checked right now (fail closed).
 */
export type VerifyCode =
  | 'VALID' | 'NOT_FOUND' | 'FORBIDDEN' | 'INSUFFICIENT_PERMISSIONS' | 'RATE_LIMITED'
  | 'USAGE_EXCEEDED' | 'DISABLED' | 'EXPIRED' | 'REVOKED' | 'UNAVAILABLE'

const CODE_OF_KEY_REASON: Record<KeyInvalidReason, VerifyCode> = {
  malformed: 'NOT_FOUND',
  unknown: 'NOT_FOUND',
  secret_retired: 'NOT_FOUND',
  expired: 'EXPIRED',
  revoked: 'REVOKED',
  disabled: 'DISABLED'
}

// invalid_api_key names its reason in its detail only: read back from the one wording (errors.ts).
const CODE_OF_KEY_DETAIL = new Map(Object.entries(INVALID_API_KEY_DETAILS)
  .map(([reason, words]) => [GatewayProblems.invalidApiKey([words]).message, CODE_OF_KEY_REASON[reason as KeyInvalidReason]]))

const CODE_OF_TOKEN_DETAIL = new Map<string, VerifyCode>([
  [AuthDetails.tokenExpired, 'EXPIRED'],
  [GatewayDetails.sessionRevoked, 'REVOKED']
])

const CODE_OF_PROBLEM = new Map<string, VerifyCode>([
  [AuthProblems.credentialsMissing.code, 'NOT_FOUND'],
  [GatewayProblems.permissionDenied.code, 'INSUFFICIENT_PERMISSIONS'],
  [GatewayProblems.rateLimited.code, 'RATE_LIMITED'],
  [GatewayProblems.concurrencyLimited.code, 'RATE_LIMITED'],
  [GatewayProblems.quotaExhausted.code, 'USAGE_EXCEEDED'],
  [GatewayProblems.identityUnavailable.code, 'UNAVAILABLE'],
  [GatewayProblems.trafficControlUnavailable.code, 'UNAVAILABLE']
])

/**
 * The code of a problem the decision refused with. Everything not named above (no
 * route for the path, a route denied to all, a malformed path or two credentials at
 * once) is FORBIDDEN: the request would not pass, whoever asked.
 */
function codeOfProblem (problem: PortierProblem): VerifyCode {
  if (problem.code === GatewayProblems.invalidApiKey.code) return CODE_OF_KEY_DETAIL.get(problem.message) ?? 'NOT_FOUND'
  if (problem.code === AuthProblems.invalidToken.code) return CODE_OF_TOKEN_DETAIL.get(problem.message) ?? 'NOT_FOUND'
  return CODE_OF_PROBLEM.get(problem.code) ?? 'FORBIDDEN'
}

/** A refusal as the problem it is: what escaped the stages unexpectedly is an internal error, never an allow. */
export function problemOf (verdict: Extract<Verdict, { allowed: false }>): PortierProblem {
  return isPortierProblem(verdict.problem) ? verdict.problem : CommonProblems.internal()
}

export function codeOf (verdict: Verdict): VerifyCode {
  return verdict.allowed ? 'VALID' : codeOfProblem(problemOf(verdict))
}
