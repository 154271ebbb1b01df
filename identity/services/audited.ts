import { isPortierProblem } from '../../common/problem.js'
import type { AuditEntry, AuditTarget } from './audit.js'

/**
 * Problem statuses recorded as refused attempts (outcome failure, the problem's code as
 * error_code): a permission the caller lacks, a state that forbids the change. Bad
 * input (400) and unknown ids (404) change nothing and say nothing about intent.
 */
const REFUSED_STATUSES: ReadonlySet<number> = new Set([403, 409])

/** What a service method's record says, computed from its arguments and result. */
export interface AuditRecipe<A extends unknown[], R, B = unknown> {
  /** The action name; `before` is what `before()` read (null when absent or unreadable). */
  action: string | ((args: A, before: B | null) => string)
  /** What the call acts on; `result` is null for a refused call. */
  target: (args: A, result: R | null) => AuditTarget | null
  /** The state before the change, read before the call; a throw reads as null (the call then says what is wrong). */
  before?: (args: A) => B
  /** The state after it; never a secret, a hash of one, or a password. */
  after?: (result: R, args: A) => unknown
}

export interface AuditRecorder { record: (entry: AuditEntry) => unknown }

function readSafely<A extends unknown[], B> (read: ((args: A) => B) | undefined, args: A): B | null {
  if (read === undefined) return null
  try {
    return read(args)
  } catch {
    return null
  }
}

/**
 * `fn` recording one audit record per call: on success, with what changed; when refused
 * (403, 409), with the problem's code. Other failures are not recorded. Services wrapped
 * this way record whoever calls them: the admin API, self-service, the CLI, the seeding.
 */
export function audited<A extends unknown[], R, B = unknown> (
  audit: AuditRecorder, recipe: AuditRecipe<NoInfer<A>, NoInfer<R>, B>, fn: (...args: A) => Promise<R>
): (...args: A) => Promise<R> {
  return async (...args: A): Promise<R> => {
    const before = readSafely(recipe.before, args)
    const action = typeof recipe.action === 'string' ? recipe.action : recipe.action(args, before)
    let result: R
    try {
      result = await fn(...args)
    } catch (err) {
      if (isPortierProblem(err) && REFUSED_STATUSES.has(err.statusCode ?? 0)) {
        audit.record({ action, outcome: 'failure', errorCode: err.code, target: recipe.target(args, null) })
      }
      throw err
    }
    const after = recipe.after?.(result, args)
    audit.record({
      action,
      target: recipe.target(args, result),
      changes: before === null && after === undefined ? null : { ...(before !== null ? { before } : {}), ...(after !== undefined ? { after } : {}) }
    })
    return result
  }
}
