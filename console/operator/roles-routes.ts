import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { formText } from '../forms.js'
import type { Problem } from '../identity-client.js'
import { operatorUser, type PageUser } from '../page-user.js'
import { draftOf, EMPTY_ROLE_DRAFT, rolePage, rolePath, ROLES_PATH, rolesPage, type AdminRole, type RoleDraft } from '../pages/operator/roles.js'
import { notFoundPage } from '../pages/refused.js'
import { clientFacts } from '../session.js'
import { backTo, done, refused, takeNotice } from './notice.js'
import type { OperatorPageDeps } from './users-routes.js'

const HTML = 'text/html; charset=utf-8'
const adminRolePath = (name: string): string => `/admin/roles/${encodeURIComponent(name)}`

type NameParams = { Params: { name: string } }
type RoleAnswer = { role: AdminRole }

/** A refusal's status for the page that shows it: identity's own 4xx, or 502 when identity failed. */
const statusOf = (problem: Problem): number => problem.status >= 400 && problem.status < 500 ? problem.status : 502

/** A form the console cannot send as it is: shown as identity's refusals are. */
const formProblem = (detail: string, status = 400): Problem => ({ status, code: 'form_invalid', title: 'Form not sent', detail })

/** The permissions typed one a line (commas and spaces between are taken too), once each. */
const permissionsOf = (text: string): string[] => [...new Set(text.split(/[\s,]+/).filter((p) => p !== ''))]

/** The key lifetime typed: a number of days, null for the default (empty), or why it cannot be read. */
function lifetimeOf (text: string): number | null | { error: string } {
  if (text === '') return null
  if (!/^\d{1,6}$/.test(text)) return { error: 'The key lifetime is a whole number of days, or empty for the default. Nothing was changed.' }
  return Number(text)
}

/** The draft the permissions form sent, over the role's (or an empty) draft. */
function grantsDraft (form: unknown, base: RoleDraft): RoleDraft {
  return { ...base, permissions: formText(form, 'permissions'), lifetime: formText(form, 'key_max_lifetime_days') }
}

/**
 * Roles: identity's roles listed and created, and on each role's page its permissions
 * and key lifetime, its traffic policies (JSON, checked by identity) and deleting it
 * once its name is typed. A refused form comes back with what was typed and
 * identity's reason, nothing changed; a done one redirects with what it did.
 */
export function rolesRoutes (app: FastifyInstance, deps: OperatorPageDeps): void {
  const { identity, admin, now, guard } = deps

  const operator = async (request: FastifyRequest, reply: FastifyReply): Promise<PageUser | null> =>
    await operatorUser(request, reply, identity, now(), 'roles')

  async function showRoles (request: FastifyRequest, reply: FastifyReply, user: PageUser, draft: RoleDraft, error: Problem | null): Promise<FastifyReply> {
    const listed = await admin.call<{ roles: AdminRole[] }>('GET', '/admin/roles', user.access, clientFacts(request))
    if (!listed.ok) return await reply.code(502).type(HTML).send(rolesPage({ user, roles: null, draft, notice: refused(listed.problem.detail) }))
    const notice = error === null ? takeNotice(request) : refused(error.detail)
    return await reply.code(error === null ? 200 : statusOf(error)).type(HTML).send(rolesPage({ user, roles: listed.body.roles, draft, notice }))
  }

  async function showRole (request: FastifyRequest, reply: FastifyReply, user: PageUser, role: AdminRole, draft: RoleDraft, error: Problem | null): Promise<FastifyReply> {
    const notice = error === null ? takeNotice(request) : refused(error.detail)
    return await reply.code(error === null ? 200 : statusOf(error)).type(HTML).send(rolePage({ user, role, draft, notice, now: now() }))
  }

  /** The role of the address, or null once the answer is sent: 404 for an unknown (or malformed) name, as identity says. */
  async function roleOf (request: FastifyRequest<NameParams>, reply: FastifyReply, user: PageUser): Promise<AdminRole | null> {
    const answer = await admin.call<RoleAnswer>('GET', adminRolePath(request.params.name), user.access, clientFacts(request))
    if (answer.ok) return answer.body.role
    const { status, detail } = answer.problem
    if (status === 404 || status === 400) await reply.code(404).type(HTML).send(notFoundPage())
    else await backTo(request, reply, ROLES_PATH, refused(detail))
    return null
  }

  /** A change to the role of the address: sent to identity, then back to its page, or its page again with identity's refusal and the draft. */
  async function change (request: FastifyRequest<NameParams>, reply: FastifyReply, draftFor: (role: AdminRole) => RoleDraft,
    bodyOf: (draft: RoleDraft) => { body: Record<string, unknown> } | { error: string }, said: string): Promise<FastifyReply> {
    const user = await operator(request, reply)
    if (user === null) return reply
    const role = await roleOf(request, reply, user)
    if (role === null) return reply
    const draft = draftFor(role)
    const sent = bodyOf(draft)
    if ('error' in sent) return await showRole(request, reply, user, role, draft, formProblem(sent.error))
    // PATCH, not PUT: a tab left open on a role deleted since cannot create it again.
    const answer = await admin.call<RoleAnswer>('PATCH', adminRolePath(role.name), user.access, clientFacts(request), { body: sent.body })
    if (!answer.ok) return await showRole(request, reply, user, role, draft, answer.problem)
    return await backTo(request, reply, rolePath(role.name), done(`Role ${role.name}: ${said}`))
  }

  app.get(ROLES_PATH, async (request, reply) => {
    const user = await operator(request, reply)
    if (user === null) return reply
    return await showRoles(request, reply, user, EMPTY_ROLE_DRAFT, null)
  })

  app.post(ROLES_PATH, { preHandler: guard }, async (request, reply) => {
    const user = await operator(request, reply)
    if (user === null) return reply
    const draft = { ...grantsDraft(request.body, EMPTY_ROLE_DRAFT), name: formText(request.body, 'name') }
    const refuse = async (detail: string): Promise<FastifyReply> =>
      await showRoles(request, reply, user, draft, formProblem(detail))
    if (draft.name === '') return await refuse('Give the role a name. Nothing was changed.')
    const lifetime = lifetimeOf(draft.lifetime)
    if (lifetime !== null && typeof lifetime === 'object') return await refuse(lifetime.error)
    // PUT would replace an existing role's permissions: creating never does.
    const existing = await admin.call<RoleAnswer>('GET', adminRolePath(draft.name), user.access, clientFacts(request))
    if (existing.ok) {
      return await showRoles(request, reply, user, draft, formProblem(`A role named ${draft.name} already exists: change it on its own page. Nothing was changed.`, 409))
    }
    const created = await admin.call<RoleAnswer>('PUT', adminRolePath(draft.name), user.access, clientFacts(request),
      { body: { permissions: permissionsOf(draft.permissions), key_max_lifetime_days: lifetime } })
    if (!created.ok) return await showRoles(request, reply, user, draft, created.problem)
    return await backTo(request, reply, rolePath(created.body.role.name), done(`Role ${created.body.role.name} is created.`))
  })

  app.get<NameParams>(`${ROLES_PATH}/:name`, async (request, reply) => {
    const user = await operator(request, reply)
    if (user === null) return reply
    const role = await roleOf(request, reply, user)
    if (role === null) return reply
    return await showRole(request, reply, user, role, draftOf(role), null)
  })

  app.post<NameParams>(`${ROLES_PATH}/:name`, { preHandler: guard }, async (request, reply) =>
    await change(request, reply, (role) => grantsDraft(request.body, draftOf(role)), (draft) => {
      const lifetime = lifetimeOf(draft.lifetime)
      if (lifetime !== null && typeof lifetime === 'object') return lifetime
      return { body: { permissions: permissionsOf(draft.permissions), key_max_lifetime_days: lifetime } }
    }, 'its permissions and key lifetime are saved.'))

  app.post<NameParams>(`${ROLES_PATH}/:name/policies`, { preHandler: guard }, async (request, reply) =>
    await change(request, reply, (role) => ({ ...draftOf(role), policies: formText(request.body, 'policies') }), (draft) => {
      if (draft.policies === '') return { body: { policies: [] } }
      try {
        // Only the JSON is read here: identity checks what the policies say, and its reason is shown.
        return { body: { policies: JSON.parse(draft.policies) as unknown } }
      } catch (error) {
        return { error: `The policies are not valid JSON (${(error as Error).message}). Nothing was changed.` }
      }
    }, 'its traffic policies are saved.'))

  app.post<NameParams>(`${ROLES_PATH}/:name/delete`, { preHandler: guard }, async (request, reply) => {
    const user = await operator(request, reply)
    if (user === null) return reply
    const role = await roleOf(request, reply, user)
    if (role === null) return reply
    // Typing the name is the confirmation: a slip of the mouse, or a stale tab of another role, deletes nothing.
    if (formText(request.body, 'confirm_name') !== role.name) {
      return await showRole(request, reply, user, role, draftOf(role),
        formProblem(`Type the role's name, ${role.name}, exactly to delete it. Nothing was deleted.`))
    }
    const deleted = await admin.call<null>('DELETE', adminRolePath(role.name), user.access, clientFacts(request))
    if (!deleted.ok) return await showRole(request, reply, user, role, draftOf(role), deleted.problem)
    return await backTo(request, reply, ROLES_PATH, done(`Role ${role.name} is deleted.`))
  })
}
