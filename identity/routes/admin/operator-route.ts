import type { OperatorPermission } from '../../../common/operator-permissions.js'

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * The operator permission an /admin route needs from a user's access token. A route
     * without one answers to the bootstrap admin token only.
     */
    operatorPermission?: OperatorPermission
  }
}

/** Route options naming the operator permission a route needs: `app.get(path, { ...operator(p), schema }, handler)`. */
export function operator (permission: OperatorPermission): { config: { operatorPermission: OperatorPermission } } {
  return { config: { operatorPermission: permission } }
}
