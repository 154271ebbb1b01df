import { Value } from 'typebox/value'
import { CommonProblems, type PortierProblem } from '../../common/problem.js'
import {
  GrantedPolicies, MAX_POLICIES_PER_OWNER, TrafficPolicies, policyListProblems, type GrantedPolicy, type TrafficPolicy
} from '../../common/traffic/policy.js'

/**
 * Identity's side of traffic policies: what it accepts on a key or a role, and what
 * it hands the gateway with a key's verdict or in an access token.
 */

/** As the HTTP apps report a body's violations (common/problem.ts): at most this many. */
const MAX_REPORTED_VIOLATIONS = 20

/**
 * The gateway takes at most this many policies with a key or in a token; a key's own
 * take up to MAX_POLICIES_PER_OWNER of them, its owner's roles the rest. So a user's
 * roles together may grant at most MAX_ROLE_POLICIES_PER_USER: any key they own fits.
 */
const MAX_GRANTED = (GrantedPolicies as { maxItems?: number }).maxItems ?? 64
export const MAX_ROLE_POLICIES_PER_USER = MAX_GRANTED - MAX_POLICIES_PER_OWNER

/** A `validation_failed` problem as the HTTP apps answer one, for rules found beyond the route's schema. */
function invalid (violations: Array<{ path: string, message: string }>): PortierProblem {
  const shown = violations.slice(0, MAX_REPORTED_VIOLATIONS)
  return CommonProblems.validationFailed([shown.map((v) => `${v.path} ${v.message}`).join('; ')], { extensions: { errors: shown } })
}

/**
 * The policies, if the schema and the list rules (no name twice) accept them; else
 * a `validation_failed` problem naming `field` and the item. The admin routes check
 * the schema first; the CLI and any other caller rely on this.
 */
export function checkedPolicies (policies: readonly TrafficPolicy[], field = 'policies'): TrafficPolicy[] {
  const schemaErrors = [...Value.Errors(TrafficPolicies, policies)]
  if (schemaErrors.length > 0) {
    throw invalid(schemaErrors.map((error) => ({ path: `${field}${error.instancePath}`, message: error.message })))
  }
  const listProblems = policyListProblems(policies)
  if (listProblems.length > 0) {
    throw invalid(listProblems.map((problem) => {
      const [where, ...said] = problem.split(': ')
      return { path: `${field}/${where ?? ''}`, message: said.join(': ') }
    }))
  }
  return [...policies]
}

/**
 * Refuses a change after which a user's roles would grant more policies than fit
 * beside a key's own (see MAX_ROLE_POLICIES_PER_USER). `field` is what the change set.
 */
export function requireRolePolicyRoom (count: number, field: string, whose: string): void {
  if (count <= MAX_ROLE_POLICIES_PER_USER) return
  throw invalid([{
    path: field,
    message: `would give ${whose} ${count} traffic policies through roles; a user's roles may grant at most ${MAX_ROLE_POLICIES_PER_USER} together`
  }])
}

/** A user's roles' policies as granted, role by role in the order given, each tagged `role:<name>`. */
export function rolePolicyGrants (roles: ReadonlyArray<{ name: string, policies: readonly TrafficPolicy[] }>): GrantedPolicy[] {
  return roles.flatMap((role) => role.policies.map((policy) => ({ source: `role:${role.name}`, policy })))
}

/** A key's policies as the gateway enforces them: its own first, then its owner's roles'. */
export function keyPolicyGrants (own: readonly TrafficPolicy[], ownerGrants: readonly GrantedPolicy[]): GrantedPolicy[] {
  return [...own.map((policy) => ({ source: 'key', policy })), ...ownerGrants]
}
