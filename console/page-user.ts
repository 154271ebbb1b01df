import type { FastifyReply, FastifyRequest } from 'fastify'
import { notePrincipal } from '../common/logger.js'
import type { IdentityClient } from './identity-client.js'
import { sectionById, sectionsOf, type OperatorSectionId } from './operator/access.js'
import { forbiddenPage } from './pages/refused.js'
import { BASE, type NavUser } from './pages/layout.js'
import { clientFacts, signedIn } from './session.js'

export interface PageUser extends NavUser { access: string }

const HTML = 'text/html; charset=utf-8'

/**
 * The signed-in user with a fresh CSRF token for the page's forms and the operator pages
 * their permissions open now (read from identity on each page, so a role taken away
 * hides its pages at once), or null once the answer is a redirect to the sign-in page.
 */
export async function pageUser (request: FastifyRequest, reply: FastifyReply, identity: IdentityClient, now: number): Promise<PageUser | null> {
  const user = await signedIn(request, identity, now)
  if (user === null) {
    await reply.redirect(`${BASE}/sign-in`, 303)
    return null
  }
  const profile = await identity.profile(user.access, clientFacts(request))
  if (!profile.ok && profile.problem.status === 401) {
    // The session was ended elsewhere (by the user from another browser, by an operator): sign this browser out.
    request.session.delete()
    await reply.redirect(`${BASE}/sign-in`, 303)
    return null
  }
  if (profile.ok) notePrincipal(request, { type: 'user', id: profile.body.user.id })
  return { ...user, csrf: reply.generateCsrf(), sections: profile.ok ? sectionsOf(profile.body.permissions) : [] }
}

/**
 * The signed-in user when their permissions open the operator page `id`; otherwise the
 * answer is sent (a redirect to sign in, or 403) and the result is null.
 */
export async function operatorUser (request: FastifyRequest, reply: FastifyReply, identity: IdentityClient, now: number, id: OperatorSectionId): Promise<PageUser | null> {
  const user = await pageUser(request, reply, identity, now)
  if (user === null) return null
  const section = sectionById(id)
  if (!user.sections.includes(section)) {
    await reply.code(403).type(HTML).send(forbiddenPage(user, section.permission))
    return null
  }
  return user
}
