import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'

/**
 * Every answer's security headers, and the origin checks of every state-changing
 * request. The CSP allows the console's own script and style files only: no inline
 * script or style anywhere, no framing, forms posted only to the console.
 */
export const CONTENT_SECURITY_POLICY = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

const HEADERS: Record<string, string> = {
  'content-security-policy': CONTENT_SECURITY_POLICY,
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  // Not no-referrer: under it Chromium sends `Origin: null` on the console's own form
  // posts, which the origin check below must refuse. same-origin tells other sites nothing.
  'referrer-policy': 'same-origin',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
  'permissions-policy': 'camera=(), microphone=(), geolocation=(), interest-cohort=()'
}

export function installSecurityHeaders (app: FastifyInstance, options: { secureCookie: boolean }): void {
  app.addHook('onSend', (_request, reply, payload, done) => {
    for (const [name, value] of Object.entries(HEADERS)) reply.header(name, value)
    // Served over HTTPS only when the cookie is Secure: then tell browsers to keep to HTTPS.
    if (options.secureCookie) reply.header('strict-transport-security', 'max-age=31536000')
    done(null, payload)
  })
}

/** Why a state-changing request was refused before its handler; null when it may go on. */
export function crossSiteRefusal (request: FastifyRequest): string | null {
  const site = request.headers['sec-fetch-site']
  // Browsers send it on every request; `none` is a navigation the user typed, never a form post, so it is refused too.
  if (site !== undefined && site !== 'same-origin') return `the request came from another site (Sec-Fetch-Site: ${site})`
  const origin = request.headers.origin
  if (origin !== undefined) {
    const own = `${request.protocol}://${request.host}`
    if (origin !== own) return 'the request came from another origin'
  }
  return null
}

export type Refuse = (request: FastifyRequest, reply: FastifyReply, reason: string) => FastifyReply
