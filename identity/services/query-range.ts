import { CommonProblems, type PortierProblem } from '../../common/problem.js'

/**
 * A time range asked for in a query string (`from` inclusive, `to` exclusive), whose
 * problems answer as a schema violation of the query string does: the audit trail's
 * filters, a key's usage over time.
 */

/** A range member's problem, with the path and message a schema violation would give. */
export function rangeProblem (member: 'from' | 'to', message: string): PortierProblem {
  return CommonProblems.validationFailed([`querystring/${member} ${message}`], { extensions: { errors: [{ path: `querystring/${member}`, message }] } })
}

/** Refuses a range that ends before it starts or where it starts: it can hold nothing, so it was meant otherwise. */
export function requireOrderedRange (from: number | undefined, to: number | undefined): void {
  if (from !== undefined && to !== undefined && from >= to) throw rangeProblem('from', 'must be before to')
}
