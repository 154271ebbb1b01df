import { hkdfSync } from 'node:crypto'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import fastifySecureSession from '@fastify/secure-session'
import fastifyCsrf from '@fastify/csrf-protection'
import type { ClientFacts, IdentityClient, TokenSet } from './identity-client.js'

/**
 * The signed-in user's tokens live in one cookie, encrypted and authenticated
 * (@fastify/secure-session: libsodium secretbox), never in a page, a script or a URL.
 * The console holds no database: a console process can be restarted or replicated
 * with the same CONSOLE_COOKIE_SECRET and nobody is signed out.
 */

declare module '@fastify/secure-session' {
  interface SessionData {
    /** The user's identity tokens and when the access token expires (ms since the epoch). */
    tokens: { access: string, refresh: string, expiresAt: number, email: string }
    _csrf: string
  }
}

/** `__Host-`: the browser accepts the cookie only Secure, from HTTPS, for Path=/ and without Domain, so no sibling host can set or shadow it. */
export const SECURE_COOKIE_NAME = '__Host-portier-console'
/** Plain http on loopback (npm start): browsers refuse Secure and `__Host-` cookies there. */
export const PLAIN_COOKIE_NAME = 'portier-console'

/** Refresh a little before the access token expires, so a page never calls identity with one that lapses on the way. */
const REFRESH_MARGIN_MS = 30_000
/** The cookie outlives no session: identity's absolute session lifetime is 30 days at most by default; the refresh token bounds it anyway. */
const COOKIE_MAX_AGE_SECONDS = 30 * 86_400

export interface SessionOptions { cookieSecret: string, secureCookie: boolean }

export async function registerSession (app: FastifyInstance, options: SessionOptions): Promise<void> {
  // A 32-byte key from the configured secret (any length ≥ 32): HKDF, so the secret's own format does not matter.
  const key = Buffer.from(hkdfSync('sha256', options.cookieSecret, 'portier-console', 'session cookie', 32))
  await app.register(fastifySecureSession, {
    key,
    cookieName: options.secureCookie ? SECURE_COOKIE_NAME : PLAIN_COOKIE_NAME,
    expiry: COOKIE_MAX_AGE_SECONDS,
    cookie: { path: '/', httpOnly: true, secure: options.secureCookie, sameSite: 'strict', maxAge: COOKIE_MAX_AGE_SECONDS }
  })
  // Synchroniser token: its secret is in the session cookie, the token in each form.
  await app.register(fastifyCsrf, { sessionPlugin: '@fastify/secure-session' })
}

export function clientFacts (request: FastifyRequest): ClientFacts {
  return { ip: request.ip, userAgent: request.headers['user-agent'] }
}

export function keepTokens (request: FastifyRequest, tokens: TokenSet, email: string, now: number): void {
  request.session.set('tokens', { access: tokens.access_token, refresh: tokens.refresh_token, expiresAt: now + tokens.expires_in * 1000, email })
}

/** Who is signed in: their access token (refreshed first when it is near its expiry) and e-mail, or null. */
export async function signedIn (request: FastifyRequest, identity: IdentityClient, now: number): Promise<{ access: string, email: string } | null> {
  const tokens = request.session.get('tokens')
  if (tokens === undefined) return null
  if (tokens.expiresAt - REFRESH_MARGIN_MS > now) return { access: tokens.access, email: tokens.email }
  const refreshed = await identity.refresh(tokens.access, tokens.refresh, clientFacts(request))
  if (!refreshed.ok) {
    // The session ended (revoked, expired, reused refresh token): sign the browser out too.
    if (refreshed.problem.status === 401) request.session.delete()
    return null
  }
  keepTokens(request, refreshed.body, tokens.email, now)
  return { access: refreshed.body.access_token, email: tokens.email }
}
