import { defineProblem } from '../common/problem.js'

/**
 * The mock's own problem table (Fastify's and the shared ones come from
 * common/problem.ts). Codes are stable and never reused across Portier services.
 */
export const UpstreamMockProblems = {
  resourceNotFound: defineProblem('resource_not_found', 404, 'Resource not found', 'No %s has id %s.')
} as const
