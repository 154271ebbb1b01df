import type { FastifyInstance, FastifyRequest, RouteOptions } from 'fastify'
import { readBearer } from '../../../common/credentials.js'
import { credentialsMatch } from '../../../common/constant-time.js'
import { isDocumentationPath } from '../../../common/documentation-paths.js'
import { isPortierProblem, type ProblemFactory } from '../../../common/problem.js'
import { IdentityProblems } from '../../errors.js'
import type { AuditActor } from '../../services/audit-context.js'
import { runAs } from '../../services/audit-context.js'
import { grantsOperator, type OperatorPermission } from '../../../common/operator-permissions.js'
import type { Sessions } from '../../services/sessions.js'
import { actAs } from '../audit-context.js'
// Its declaration of the route config's operatorPermission.
import './operator-route.js'

/** The only path of the admin listener that answers without a credential, documentation apart. */
const OPEN_PATHS = new Set(['/healthz'])
const INTERNAL_PREFIX = '/internal/'
/** Prometheus metrics: either credential (see below). */
const METRICS_PATH = '/metrics'

/** Who acts when the bootstrap admin token is presented. */
const BOOTSTRAP: AuditActor = Object.freeze({ type: 'admin_token', id: 'bootstrap' })

/** What every /admin route can answer for want of the admin credential or of an operator permission. */
export const ADMIN_PROBLEMS: readonly ProblemFactory[] = [IdentityProblems.adminUnauthorized, IdentityProblems.adminForbidden]
/** What every /internal route can answer for want of the service credential. */
export const SERVICE_PROBLEMS: readonly ProblemFactory[] = [IdentityProblems.serviceUnauthorized]
/** What /metrics answers without either credential: the listener's refusal outside /internal (operators' tokens are not taken there). */
export const METRICS_PROBLEMS: readonly ProblemFactory[] = [IdentityProblems.adminUnauthorized]

/** The OpenAPI security scheme of operators' access tokens (identity/openapi.ts declares it). */
export const OPERATOR_SECURITY_SCHEME = 'operatorToken'
const ADMIN_SECURITY_SCHEME = 'adminCredential'

/** A refused operator, as the audit trail records it (services.audit's entry shape). */
export interface OperatorRefusal {
  action: 'admin.access'
  outcome: 'failure'
  errorCode: string
  target: { type: 'route', id: string }
}

/** What the guard needs of identity to admit a user's access token. */
export interface OperatorAdmission {
  /** The token's signature and expiry, its session not revoked, its user not disabled. */
  sessions: Pick<Sessions, 'authenticate'>
  /** The user's permissions as the database holds them now, not as the token says. */
  permissionsOf: (userId: string) => string[]
  /** Where refusals are recorded. */
  audit: { record: (entry: OperatorRefusal) => unknown }
}

export interface AdminCredentials { adminToken: string, serviceToken: string }

/**
 * Lets a user's access token in where its holder's roles grant the operator permission
 * the route names; otherwise 403 naming it, recorded in the audit trail. Any failure of
 * the token itself (bad signature, expired, session revoked, user disabled) is the same
 * 401 as a wrong admin token: a caller learns nothing about a token it cannot use.
 */
async function admitOperator (request: FastifyRequest, token: string, permission: OperatorPermission, operators: OperatorAdmission): Promise<void> {
  let userId: string
  try {
    userId = (await operators.sessions.authenticate(token)).userId
  } catch (err) {
    if (isPortierProblem(err)) throw IdentityProblems.adminUnauthorized()
    throw err
  }
  actAs(request, { type: 'user', id: userId })
  // Read now: a role taken away bites at the next request, not when the token expires.
  if (grantsOperator(operators.permissionsOf(userId), permission)) return
  const route = `${request.method} ${request.routeOptions.url ?? request.url}`
  runAs(request.auditContext, () => operators.audit.record({
    action: 'admin.access', outcome: 'failure', errorCode: IdentityProblems.adminForbidden.code, target: { type: 'route', id: route }
  }))
  throw IdentityProblems.adminForbidden([permission])
}

/** Documents each operator route's credentials: the admin token, or an operator token with its permission. */
function documentOperatorAccess (route: RouteOptions): void {
  const permission = route.config?.operatorPermission
  if (permission === undefined || route.schema === undefined || route.schema.security !== undefined) return
  route.schema.security = [{ [ADMIN_SECURITY_SCHEME]: [] }, { [OPERATOR_SECURITY_SCHEME]: [permission] }]
}

/**
 * Guards the whole admin listener, before any handler: `/internal/*` takes the service
 * credential, everything else the admin credential (compared in constant time) or, on a
 * route that names an operator permission (operator-route.ts), a user's access token
 * whose roles grant it. An unknown path, or a route without one, answers 401 to
 * anything but the admin credential, so nobody learns which admin routes exist without
 * a credential. Routes must be registered after this call (their documentation is
 * completed as they are).
 *
 * `/metrics` takes either credential. Monitoring inside the cluster holds the service
 * credential, as gateways do, and must not need the admin one, which creates users and
 * keys; operators holding the admin one may read it too. The service credential gains
 * nothing it could act on: the metrics are counts under fixed labels, never an e-mail,
 * a key id or a secret. Without either, it answers `admin_unauthorized` like every
 * path outside /internal.
 *
 * The documentation (`/docs`, its assets under `/docs/`, `/openapi.json`) is open:
 * it describes the API, it gives no access to it, the listener is bound to 127.0.0.1
 * by default, and the operations it lists are public in the source anyway. Only the
 * Swagger UI's routes live under `/docs/`, so the exemption opens nothing else.
 */
export function guardAdminListener (app: FastifyInstance, credentials: AdminCredentials, operators: OperatorAdmission): void {
  app.addHook('onRoute', documentOperatorAccess)
  app.addHook('onRequest', async (request) => {
    // The route that will answer decides, not how the path is spelt: `/%69nternal/…` is
    // routed to /internal and must take the service credential there too.
    const path = request.routeOptions.url ?? request.url.split('?', 1)[0] as string
    if (OPEN_PATHS.has(path) || isDocumentationPath(path)) return
    const credential = readBearer(request.headers.authorization)
    const token = credential.kind === 'token' ? credential.token : null
    const presented = (expected: string): boolean => token !== null && credentialsMatch(token, expected)
    if (path.startsWith(INTERNAL_PREFIX)) {
      if (presented(credentials.serviceToken)) return
      throw IdentityProblems.serviceUnauthorized()
    }
    if (presented(credentials.adminToken)) {
      actAs(request, BOOTSTRAP)
      return
    }
    if (path === METRICS_PATH && presented(credentials.serviceToken)) return
    const permission = request.routeOptions.config.operatorPermission
    if (token === null || permission === undefined) throw IdentityProblems.adminUnauthorized()
    await admitOperator(request, token, permission, operators)
  })
}
