import { bearerChallenge } from '../../common/problem.js'
import { GatewayProblems } from '../errors.js'
import type { ResolvedRoute } from '../routing/index.js'
import type { Principal } from './authenticate.js'

/** The 403 for a principal lacking `permission`; tokens also get RFC 6750's insufficient_scope. */
function permissionDenied (principal: Principal, permission: string) {
  return GatewayProblems.permissionDenied([permission], {
    extensions: { missing_permission: permission },
    ...(principal.kind === 'user' ? { headers: { 'www-authenticate': bearerChallenge('insufficient_scope') } } : {})
  })
}

/**
 * The permission stage: the route's permission against the principal's, with the
 * `resource:*` and `*` wildcards (the granting permissions are prepared with the route,
 * the principal's as a set with its verification: a few set lookups). A route declared
 * without a permission is denied to everyone (403 `permission_not_declared`); a missing
 * permission is a 403 naming it. Returns the principal, now authorised for the route.
 */
export function authorise (route: ResolvedRoute, principal: Principal): Principal {
  if (route.permission === null) throw GatewayProblems.permissionNotDeclared([route.method, route.pattern])
  for (const granting of route.grantedBy) if (principal.permissionSet.has(granting)) return principal
  throw permissionDenied(principal, route.permission)
}
