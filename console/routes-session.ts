import type { FastifyInstance } from 'fastify'
import type { IdentityClient } from './identity-client.js'
import { BASE } from './pages/layout.js'
import { signInPage } from './pages/sign-in.js'
import { clientFacts, keepTokens, signedIn } from './session.js'
import { formText, type Guard } from './forms.js'

/** What identity's refusal of a sign-in says to the person signing in. */
function signInError (code: string, detail: string): string {
  if (code === 'invalid_credentials') return 'The e-mail or password is wrong.'
  if (code === 'login_throttled') return `Too many failed sign-ins. ${detail}`
  return detail
}

export function sessionRoutes (app: FastifyInstance, deps: { identity: IdentityClient, now: () => number, guard: Guard }): void {
  const { identity, now, guard } = deps

  app.get(BASE, async (request, reply) => {
    const user = await signedIn(request, identity, now())
    return await reply.redirect(user === null ? `${BASE}/sign-in` : `${BASE}/keys`, 303)
  })

  app.get(`${BASE}/sign-in`, async (request, reply) => {
    if (await signedIn(request, identity, now()) !== null) return await reply.redirect(`${BASE}/keys`, 303)
    return await reply.type('text/html; charset=utf-8').send(signInPage({ csrf: reply.generateCsrf(), error: null, email: '' }))
  })

  app.post(`${BASE}/sign-in`, { preHandler: guard }, async (request, reply) => {
    const email = formText(request.body, 'email')
    const password = formText(request.body, 'password')
    const answer = await identity.signIn(email, password, clientFacts(request))
    if (!answer.ok) {
      const { problem } = answer
      reply.code(problem.status === 400 ? 400 : problem.status === 429 ? 429 : problem.status === 401 ? 401 : 502)
      if (problem.status === 429) reply.header('retry-after', '60')
      return await reply.type('text/html; charset=utf-8').send(signInPage({ csrf: reply.generateCsrf(), error: signInError(problem.code, problem.detail), email }))
    }
    // A new session: a new CSRF secret, so no token handed out before signing in stays valid after.
    request.session.set('_csrf', undefined)
    keepTokens(request, answer.body, email, now())
    return await reply.redirect(`${BASE}/keys`, 303)
  })

  app.post(`${BASE}/sign-out`, { preHandler: guard }, async (request, reply) => {
    const user = await signedIn(request, identity, now())
    // Identity ends the session: the access and refresh tokens in the cookie are dead even if the cookie were kept.
    if (user !== null) await identity.signOut(user.access, clientFacts(request))
    request.session.delete()
    return await reply.redirect(`${BASE}/sign-in`, 303)
  })
}
