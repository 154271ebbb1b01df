import type { KeyOutcome } from '../../common/internal-api.js'
import { isPortierProblem } from '../../common/problem.js'
import { GatewayProblems } from '../errors.js'

/** The refusals a key's usage tells apart, by problem code; any other refusal is not an outcome of its own. */
const OUTCOME_OF_CODE: ReadonlyMap<string, Exclude<KeyOutcome, 'allowed' | 'upstream_error'>> = new Map([
  [GatewayProblems.permissionDenied.code, 'forbidden'],
  [GatewayProblems.permissionNotDeclared.code, 'forbidden'],
  [GatewayProblems.rateLimited.code, 'rate_limited'],
  [GatewayProblems.concurrencyLimited.code, 'rate_limited'],
  [GatewayProblems.quotaExhausted.code, 'quota_exhausted']
])

/** What a refusal of a verified key's request before it was let through counts as, if anything. */
export function refusalOutcome (error: unknown): Exclude<KeyOutcome, 'allowed' | 'upstream_error'> | undefined {
  return isPortierProblem(error) ? OUTCOME_OF_CODE.get(error.code) : undefined
}
