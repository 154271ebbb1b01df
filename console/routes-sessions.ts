import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { Answer, IdentityClient } from './identity-client.js'
import type { Guard } from './forms.js'
import { BASE } from './pages/layout.js'
import { sessionsPage, type SessionsNotice } from './pages/sessions.js'
import { pageUser } from './page-user.js'
import { clientFacts, signedIn } from './session.js'

declare module '@fastify/secure-session' {
  interface SessionData {
    /** What the last sessions form did: kept in the cookie across the redirect, shown once, so nothing of it is in a URL. */
    sessionsNotice: NonNullable<SessionsNotice>
  }
}

const HTML = 'text/html; charset=utf-8'
const PAGE = `${BASE}/sessions`

const plural = (count: number): string => count === 1 ? '1 other session' : `${count} other sessions`

/** What identity's answer to ending one session says to the user. */
function endedNotice (answer: Answer<null>): NonNullable<SessionsNotice> {
  if (answer.ok) return { kind: 'status', text: 'The session was ended: it is signed out.' }
  if (answer.problem.code === 'session_not_found') return { kind: 'alert', text: 'That session was not found among yours. Nothing was changed.' }
  return { kind: 'alert', text: answer.problem.detail }
}

/**
 * My sessions: the user's live sessions from identity, ending one or all the others.
 * Each form goes through the guard (same site, same origin, CSRF token), then
 * post-redirect-get, so reloading the page never posts again.
 */
export function sessionsRoutes (app: FastifyInstance, deps: { identity: IdentityClient, now: () => number, guard: Guard }): void {
  const { identity, now, guard } = deps

  async function backToPage (request: FastifyRequest, reply: FastifyReply, message: NonNullable<SessionsNotice>): Promise<FastifyReply> {
    request.session.set('sessionsNotice', message)
    return await reply.redirect(PAGE, 303)
  }

  app.get(PAGE, async (request, reply) => {
    const user = await pageUser(request, reply, identity, now())
    if (user === null) return reply
    const message = request.session.get('sessionsNotice') ?? null
    if (message !== null) request.session.set('sessionsNotice', undefined)
    const page = { user, now: now() }
    const answer = await identity.sessions(user.access, clientFacts(request))
    if (!answer.ok && answer.problem.status === 401) {
      // The session was ended elsewhere (from another of the user's sessions, by an operator): sign this browser out.
      request.session.delete()
      return await reply.redirect(`${BASE}/sign-in`, 303)
    }
    if (!answer.ok) return await reply.code(502).type(HTML).send(sessionsPage({ ...page, sessions: null, notice: { kind: 'alert', text: answer.problem.detail } }))
    return await reply.type(HTML).send(sessionsPage({ ...page, sessions: answer.body.sessions, notice: message }))
  })

  app.post<{ Params: { id: string } }>(`${PAGE}/:id/end`, { preHandler: guard }, async (request, reply) => {
    const user = await signedIn(request, identity, now())
    if (user === null) return await reply.redirect(`${BASE}/sign-in`, 303)
    return await backToPage(request, reply, endedNotice(await identity.endSession(user.access, request.params.id, clientFacts(request))))
  })

  app.post(`${PAGE}/end-others`, { preHandler: guard }, async (request, reply) => {
    const user = await signedIn(request, identity, now())
    if (user === null) return await reply.redirect(`${BASE}/sign-in`, 303)
    const answer = await identity.endOtherSessions(user.access, clientFacts(request))
    return await backToPage(request, reply, answer.ok
      ? { kind: 'status', text: answer.body.revoked === 0 ? 'There was no other session to end.' : `Ended ${plural(answer.body.revoked)}: they are signed out.` }
      : { kind: 'alert', text: answer.problem.detail })
  })
}
