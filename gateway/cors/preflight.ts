import type { FastifyReply, FastifyRequest } from 'fastify'
import { settleUnreadBody, type UnreadBodyLimits } from '../../common/unread-body.js'
import { GatewayDetails, GatewayProblems } from '../errors.js'
import type { RouteCors, RouteTable } from '../routing/index.js'

/** What a browser's preflight asks: may `origin` send `method` to this path. */
export interface PreflightRequest {
  readonly origin: string
  readonly method: string
}

export interface PreflightStageOptions {
  table: () => RouteTable
  /** What becomes of a body sent with a preflight (browsers send none). */
  unreadBodies: UnreadBodyLimits
}

/**
 * CORS preflights of routes whose upstream has a cors block, answered by the gateway
 * itself: a browser sends them without any credential, so they are never forwarded
 * nor authenticated (the request path counts them under the anonymous policies). The
 * answer is worked out when the table is built (routing/cors-policy.ts); nothing here
 * runs unless some upstream has a cors block.
 */
export function createPreflightStage (options: PreflightStageOptions) {
  const { unreadBodies } = options
  return {
    /** The preflight an OPTIONS request is (an Origin and an Access-Control-Request-Method), or null. */
    requested (request: FastifyRequest): PreflightRequest | null {
      if (!options.table().hasCors) return null
      const origin = request.headers.origin
      const method = request.headers['access-control-request-method']
      return origin === undefined || typeof method !== 'string' ? null : { origin, method }
    },

    /**
     * Answers an admitted preflight: 204 with the route's Access-Control-Allow-* fields,
     * or throws the refusal (403 `cors_preflight_refused`, which carries none of them)
     * for an origin the block does not list or a method it leaves out. `fields`: what
     * traffic control adds (RateLimit).
     */
    answer (request: FastifyRequest, reply: FastifyReply, cors: RouteCors, preflight: PreflightRequest, fields: readonly string[], closing: boolean): void {
      const allowed = cors.preflightFields(preflight.origin)
      if (allowed === null) throw GatewayProblems.corsPreflightRefused([GatewayDetails.corsOriginRefused])
      if (!cors.methodAllowed) throw GatewayProblems.corsPreflightRefused([GatewayDetails.corsMethodRefused(preflight.method)])
      reply.hijack()
      const response = reply.raw
      const headers = [...allowed, ...fields, 'x-request-id', request.id]
      settleUnreadBody(request.raw, unreadBodies, (outcome) => {
        if (response.destroyed) return
        if (outcome === 'close' || closing) headers.push('connection', 'close')
        response.writeHead(204, headers)
        response.end()
      })
    }
  }
}

export type PreflightStage = ReturnType<typeof createPreflightStage>
