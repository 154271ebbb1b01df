import type { FastifyReply, FastifyRequest } from 'fastify'
import type { IdentityClient } from './identity-client.js'
import { BASE } from './pages/layout.js'
import { signedIn } from './session.js'

export interface PageUser { access: string, email: string, csrf: string }

/** The signed-in user with a fresh CSRF token for the page's forms, or null once the answer is a redirect to the sign-in page. */
export async function pageUser (request: FastifyRequest, reply: FastifyReply, identity: IdentityClient, now: number): Promise<PageUser | null> {
  const user = await signedIn(request, identity, now)
  if (user === null) {
    await reply.redirect(`${BASE}/sign-in`, 303)
    return null
  }
  return { ...user, csrf: reply.generateCsrf() }
}
