import { SpanKind, SpanStatusCode, type Span } from '@opentelemetry/api'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { KEYS_VERIFY_PATH } from '../../common/internal-api.js'
import type { Tracing } from '../../common/tracing/tracing.js'

/**
 * The requests identity traces, by method and route: the ones a gateway's request
 * waits on (a key check on a cache miss) or that clients make through it (login,
 * refresh). Each joins the trace of the traceparent that came with it.
 */
export const IDENTITY_SPANS: Readonly<Record<string, string>> = Object.freeze({
  'POST /sessions': 'identity.login',
  'POST /tokens': 'identity.refresh',
  'POST /jetons': 'identity.refresh',
  [`POST ${KEYS_VERIFY_PATH}`]: 'identity.verify_key'
})

/**
 * Makes a SERVER span of each traced request on `app`: route, method and status, and
 * nothing of the body or headers (passwords, refresh tokens, keys), nor the query.
 * Installed only when tracing is on; the other routes make nothing.
 */
export function traceRequests (app: FastifyInstance, tracing: Tracing): void {
  const spans = new WeakMap<FastifyRequest, Span>()
  app.addHook('onRequest', (request, _reply, done) => {
    const route = request.routeOptions.url
    const name = route === undefined ? undefined : IDENTITY_SPANS[`${request.method} ${route}`]
    if (name !== undefined) {
      spans.set(request, tracing.tracer.startSpan(name, {
        kind: SpanKind.SERVER,
        attributes: { 'http.request.method': request.method, 'http.route': route as string }
      }, tracing.extract(request.headers)))
    }
    done()
  })
  app.addHook('onResponse', (request, reply, done) => {
    const span = spans.get(request)
    if (span !== undefined) {
      span.setAttribute('http.response.status_code', reply.statusCode)
      if (reply.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR })
      span.end()
    }
    done()
  })
}
