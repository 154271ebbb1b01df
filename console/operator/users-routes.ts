import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { formList, formText, type Guard } from '../forms.js'
import type { IdentityClient } from '../identity-client.js'
import { operatorUser, type PageUser } from '../page-user.js'
import { USERS_PATH, userPage, userPath, usersPage, type AdminUser } from '../pages/operator/users.js'
import { notFoundPage } from '../pages/refused.js'
import { clientFacts } from '../session.js'
import { sectionById } from './access.js'
import type { AdminClient } from './admin-client.js'
import { backTo, done, refused, takeNotice, type OperatorNotice } from './notice.js'

export interface OperatorPageDeps { identity: IdentityClient, admin: AdminClient, now: () => number, guard: Guard }

const HTML = 'text/html; charset=utf-8'
const adminUserPath = (id: string): string => `/admin/users/${encodeURIComponent(id)}`

type IdParams = { Params: { id: string } }
type UserAnswer = { user: AdminUser }

/** The roles the form asks for: the ticked checkboxes, or the names typed (commas or spaces between), once each. */
function rolesOf (body: unknown): string[] {
  const typed = formText(body, 'roles_text').split(/[\s,]+/).filter((name) => name !== '')
  return [...new Set([...formList(body, 'roles'), ...typed])]
}

const rolesSaid = (roles: string[]): string => roles.length === 0 ? 'no role' : roles.join(', ')

/** A change to one user: identity's call the form asks for, or why the form cannot be sent; and what it did, in words. */
interface UserAction {
  call: (form: unknown) => { method: string, suffix: string, body?: unknown } | { error: string }
  said: (user: AdminUser) => string
}

const USER_ACTIONS: Record<string, UserAction> = {
  roles: {
    call: (form) => ({ method: 'PUT', suffix: 'roles', body: { roles: rolesOf(form) } }),
    said: (user) => `${user.email} now holds ${rolesSaid(user.roles)}.`
  },
  disable: {
    call: () => ({ method: 'POST', suffix: 'disable' }),
    said: (user) => `${user.email} is disabled: signed out everywhere, and their API keys are refused.`
  },
  enable: {
    call: () => ({ method: 'POST', suffix: 'enable' }),
    said: (user) => `${user.email} is enabled again.`
  },
  password: {
    // The password goes to identity only: never into a notice, a page or a URL.
    call: (form) => {
      const password = formText(form, 'password')
      return password === '' ? { error: 'Type the new password. Nothing was changed.' } : { method: 'PUT', suffix: 'password', body: { password } }
    },
    said: (user) => `The password of ${user.email} is changed, and their sessions are ended.`
  }
}

/**
 * Users: identity's users listed and created, and on each user's page their roles,
 * disabling or enabling them, and a new password. Every form goes through the guard,
 * then back to its page with what happened (identity's refusal, word for word, when
 * it refuses: nothing is changed then).
 */
export function usersRoutes (app: FastifyInstance, deps: OperatorPageDeps): void {
  const { identity, admin, now, guard } = deps

  const operator = async (request: FastifyRequest, reply: FastifyReply): Promise<PageUser | null> =>
    await operatorUser(request, reply, identity, now(), 'users')

  /** The existing roles to tick, when the operator may list them (admin:roles); else null, and roles are typed by name. */
  async function roleNamesFor (request: FastifyRequest, user: PageUser): Promise<string[] | null> {
    if (!user.sections.includes(sectionById('roles'))) return null
    const answer = await admin.call<{ roles: Array<{ name: string }> }>('GET', '/admin/roles', user.access, clientFacts(request))
    return answer.ok ? answer.body.roles.map((role) => role.name) : null
  }

  /** The user of the address, or null once the answer is sent: 404 for an unknown (or malformed) id, as identity says. */
  async function subjectOf (request: FastifyRequest<IdParams>, reply: FastifyReply, user: PageUser): Promise<AdminUser | null> {
    const answer = await admin.call<UserAnswer>('GET', adminUserPath(request.params.id), user.access, clientFacts(request))
    if (answer.ok) return answer.body.user
    const { status, detail } = answer.problem
    if (status === 404 || status === 400) await reply.code(404).type(HTML).send(notFoundPage())
    else await backTo(request, reply, USERS_PATH, refused(detail))
    return null
  }

  app.get(USERS_PATH, async (request, reply) => {
    const user = await operator(request, reply)
    if (user === null) return reply
    const notice = takeNotice(request)
    const [listed, roleNames] = await Promise.all([
      admin.call<{ users: AdminUser[] }>('GET', '/admin/users', user.access, clientFacts(request)),
      roleNamesFor(request, user)
    ])
    const page = { user, roleNames, now: now() }
    if (!listed.ok) return await reply.code(502).type(HTML).send(usersPage({ ...page, users: null, notice: refused(listed.problem.detail) }))
    return await reply.type(HTML).send(usersPage({ ...page, users: listed.body.users, notice }))
  })

  app.post(USERS_PATH, { preHandler: guard }, async (request, reply) => {
    const user = await operator(request, reply)
    if (user === null) return reply
    const email = formText(request.body, 'email')
    const password = formText(request.body, 'password')
    if (email === '' || password === '') return await backTo(request, reply, USERS_PATH, refused('Give the new user\'s e-mail and initial password. Nothing was changed.'))
    const roles = rolesOf(request.body)
    const created = await admin.call<UserAnswer>('POST', '/admin/users', user.access, clientFacts(request), { body: { email, password, roles } })
    const notice: OperatorNotice = created.ok
      ? done(`${created.body.user.email} is created, holding ${rolesSaid(created.body.user.roles)}.`)
      : refused(created.problem.detail)
    return await backTo(request, reply, USERS_PATH, notice)
  })

  app.get<IdParams>(`${USERS_PATH}/:id`, async (request, reply) => {
    const user = await operator(request, reply)
    if (user === null) return reply
    const subject = await subjectOf(request, reply, user)
    if (subject === null) return reply
    const notice = takeNotice(request)
    return await reply.type(HTML).send(userPage({ user, subject, roleNames: await roleNamesFor(request, user), notice, now: now() }))
  })

  for (const [name, action] of Object.entries(USER_ACTIONS)) {
    app.post<IdParams>(`${USERS_PATH}/:id/${name}`, { preHandler: guard }, async (request, reply) => {
      const user = await operator(request, reply)
      if (user === null) return reply
      const subject = await subjectOf(request, reply, user)
      if (subject === null) return reply
      const back = userPath(subject.id)
      const call = action.call(request.body)
      if ('error' in call) return await backTo(request, reply, back, refused(call.error))
      const answer = await admin.call<UserAnswer>(call.method, `${adminUserPath(subject.id)}/${call.suffix}`, user.access, clientFacts(request),
        call.body !== undefined ? { body: call.body } : {})
      return await backTo(request, reply, back, answer.ok ? done(action.said(answer.body.user)) : refused(answer.problem.detail))
    })
  }
}
